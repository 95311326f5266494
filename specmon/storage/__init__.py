"""What specmon keeps on disk: the SQLite store, its records and the lasting history's
tables, and files only their owner can read."""
