"""Live audition (issue 23): latest-wins scheduling of renders while the user edits."""
