//! Reading PostgreSQL rows into the store's types (see
//! [`crate::store::columns`]). `try_get` names the column in its error.

use tokio_postgres::Row as PgRow;
use tokio_postgres::types::ToSql;

use crate::store::{StoreError, StoreResult};

crate::store::columns::row_readers!(PgRow, try_get, StoreError);

/// Every row through `map`, stopping at the first error.
pub(super) fn all<T>(rows: &[PgRow], map: fn(&PgRow) -> StoreResult<T>) -> StoreResult<Vec<T>> {
    rows.iter().map(map).collect()
}

/// Boxed parameters (as [`crate::store::sql`]'s macros build them) as the
/// slice of references `execute` and `query` take.
pub(super) fn borrowed(params: &[Box<dyn ToSql + Sync + Send>]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|b| b.as_ref() as &(dyn ToSql + Sync)).collect()
}
