"""Models: the model/decoder/precision choices of this machine and the Models dialog (downloads,
builds, the self-test, "Download and set up")."""
