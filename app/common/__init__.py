"""What every feature shares: the notifier, the session of takes, the GPU worker and its
service, the library access, the player, background jobs and thumbnails, the theme, and the
window's words (texts, remedy words, tier words)."""
