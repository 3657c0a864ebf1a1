"""Live audition (issue 23): the take rendered again and played on every change while the Live
switch is on; Keep makes the live take an ordinary one."""
