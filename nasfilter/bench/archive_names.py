"""The file names of NATS-Bench sss archives (docs/facts.md §2), in a module that imports
nothing, so that every reader of archives and benchmarks can name them."""

ARCHIVE_DIR_NAME = "NATS-sss-v1_0-50262-simple"  # the fast-mode folder
ARCHIVE_FILE_NAME = "NATS-sss-v1_0-50262.pickle.pbz2"  # the single-file archive
META_FILE_NAME = "meta.pickle.pbz2"  # the fast-mode folder's meta file
