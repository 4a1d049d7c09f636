//! Reading SQLite rows into the store's types (see [`crate::store::columns`]).

type ReadResult<T> = rusqlite::Result<T>;

crate::store::columns::row_readers!(rusqlite::Row<'_>, get);
