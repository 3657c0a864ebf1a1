"""The team library in the window (engines.team): Settings > Team library..., publishing takes,
and the Team source of the Library tab, with other designers' takes arriving as they are
published.

    settings_dialog  the dialog: the connection line, the designer, Test connection
    sources          the Library tab's Local / Team toggle and the publish button beside it
    panel, table     the Team source: filters, the table of team takes, Find similar
    progress         a publish's progress in the status bar
    thread           the one thread every team library call runs on (never the GUI thread)
    jobs             what runs there: publishing, finding, copies for dragging, the test
    watch            LISTEN/NOTIFY on a thread of its own, delivered to the GUI by signal
    presence         "the server cannot be reached" said once, and "it is back"
    publishing       Publish to team library, and sending what waits in the outbox
    dragging         team takes dragged out: copies fetched ahead of the drag
    controller       TeamController: composes the rest for app.shell.studio
"""
