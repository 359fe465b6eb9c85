"""Where runs are kept: the interface and the in-memory storage (``base``), the SQLite
results database (``sqlite_store`` on ``sqlite_file``, with ``codec``), choosing one by
path (``factory``), and rewriting an older database (``migration``)."""
