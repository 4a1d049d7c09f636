//! Reading SQLite rows into the store's types (see [`crate::store::columns`]).

crate::store::columns::row_readers!(rusqlite::Row<'_>, get, rusqlite::Error);
