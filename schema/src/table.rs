//! Parquet encoding of every table AgentRank writes, the bundle's record tables and the analysis
//! tables: explicit Arrow fields, plain `Utf8` strings, timestamps as `Timestamp(Microsecond, "UTC")`,
//! and the format's schema version in the Parquet file's key-value metadata (`agentrank.schema_version`
//! or `agentrank.analysis_schema_version`, and `agentrank.table`), where DuckDB and pyarrow both see it.
//! Each table belongs to a [`TableFormat`] (its version and encoding settings); one writer and one reader
//! serve both. Bundle rows are sorted by a stable key before writing so the same rows give the same
//! bytes; analysis rows are written in the order the analysis derives them ([`write_rows`]).

use crate::SCHEMA_VERSION;
use arrow_array::{RecordBatch, new_null_array};
use arrow_schema::{DataType, Field, FieldRef, Schema, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// Key-value metadata key holding the schema version (`MAJOR.MINOR`).
pub const META_SCHEMA_VERSION: &str = "agentrank.schema_version";
/// Key-value metadata key holding the table name.
pub const META_TABLE: &str = "agentrank.table";

/// Rows per Parquet row group (bundle tables).
const ROW_GROUP_ROWS: usize = 128 * 1024;

/// A family of tables sharing one schema version and one encoding.
#[derive(Debug, PartialEq, Eq)]
pub struct TableFormat {
    /// The key-value metadata key holding the version.
    pub version_key: &'static str,
    /// The version this code writes and reads up to (`MAJOR.MINOR`).
    pub version: &'static str,
    encoding: Encoding,
}

/// How a format's files are encoded.
#[derive(Debug, PartialEq, Eq)]
enum Encoding {
    /// ZSTD(3), chunk statistics, row groups of [`ROW_GROUP_ROWS`].
    Records,
    /// ZSTD(1), no dictionaries, the writer's default statistics and row groups: the analysis tables
    /// are small (kilobytes to a few megabytes), and plain encoding with light compression costs a
    /// fraction of dictionaries and level 3 to write, for files a few percent larger.
    Small,
}

/// The bundle's record tables (`attempts`, `tool_calls`, …), at [`SCHEMA_VERSION`].
pub const BUNDLE_FORMAT: TableFormat = TableFormat {
    version_key: META_SCHEMA_VERSION,
    version: SCHEMA_VERSION,
    encoding: Encoding::Records,
};

impl TableFormat {
    /// A format of small tables (kilobytes to a few megabytes, as the analysis tables are): plain
    /// encoding, ZSTD(1), the writer's default statistics and row groups.
    pub const fn small(version_key: &'static str, version: &'static str) -> TableFormat {
        TableFormat {
            version_key,
            version,
            encoding: Encoding::Small,
        }
    }
}

/// A table's row type (a bundle table unless it names another format).
pub trait Table: Serialize + DeserializeOwned + Sized {
    /// The table name; the file is `<NAME>.parquet`.
    const NAME: &'static str;
    /// The format the table belongs to.
    const FORMAT: &'static TableFormat = &BUNDLE_FORMAT;
    /// The explicit Arrow fields, in column order.
    fn fields() -> Vec<Field>;
    /// The key rows are sorted by before writing (unique per row within a bundle).
    fn sort_key(&self) -> String;

    /// The Arrow schema (without metadata).
    fn arrow_schema() -> Schema {
        Schema::new(Self::fields())
    }
}

/// A non-null or nullable `Utf8` field.
pub fn f_str(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}
/// A signed 64-bit integer field.
pub fn f_i64(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Int64, nullable)
}
/// A 64-bit float field.
pub fn f_f64(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Float64, nullable)
}
/// A boolean field.
pub fn f_bool(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Boolean, nullable)
}
/// A non-null list of non-null 64-bit integers.
pub fn f_list_i64(name: &str) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new("element", DataType::Int64, false))),
        false,
    )
}
/// A non-null list of non-null `Utf8` strings.
pub fn f_list_str(name: &str) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new("element", DataType::Utf8, false))),
        false,
    )
}
/// A UTC timestamp in microseconds.
pub fn f_ts(name: &str, nullable: bool) -> Field {
    Field::new(
        name,
        DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        nullable,
    )
}

/// What can go wrong encoding or decoding a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("table {table}: could not convert rows to Arrow: {source}")]
    Encode {
        table: &'static str,
        source: serde_arrow::Error,
    },
    #[error("table {table}: could not convert Arrow to rows: {source}")]
    Decode {
        table: &'static str,
        source: serde_arrow::Error,
    },
    #[error("table {table}: Parquet error: {source}")]
    Parquet {
        table: &'static str,
        source: parquet::errors::ParquetError,
    },
    #[error("table {table}: Arrow error: {source}")]
    Arrow {
        table: &'static str,
        source: arrow_schema::ArrowError,
    },
    #[error("table {table}: the file has no `{key}` metadata")]
    MissingVersion {
        table: &'static str,
        key: &'static str,
    },
    #[error("table {table}: the file is table {found:?}, not {table}")]
    WrongTable { table: &'static str, found: String },
    #[error(
        "table {table}: schema version {found} cannot be read by this reader (it reads {major}.0 to {current}); {hint}"
    )]
    UnsupportedVersion {
        table: &'static str,
        found: String,
        major: u32,
        current: &'static str,
        hint: &'static str,
    },
    #[error("table {table}: schema mismatch: {detail}")]
    SchemaMismatch { table: &'static str, detail: String },
}

/// A parsed `MAJOR.MINOR` version.
pub fn parse_version(v: &str) -> Option<(u32, u32)> {
    let (a, b) = v.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Whether a file of version `found` can be read by a reader of version `current`: same major, minor
/// not newer.
pub fn version_readable(found: &str, current: &str) -> Result<(), &'static str> {
    let (Some((fm, fmin)), Some((cm, cmin))) = (parse_version(found), parse_version(current))
    else {
        return Err("the version is not of the form MAJOR.MINOR");
    };
    if fm != cm {
        return Err(
            "a different major version is a different format; use a reader of that major version",
        );
    }
    if fmin > cmin {
        return Err("it was written by a newer version; upgrade AgentRank to read it");
    }
    Ok(())
}

fn current_major(format: &TableFormat) -> u32 {
    parse_version(format.version).map_or(0, |v| v.0)
}

/// Sorts `rows` by their key and converts them to one Arrow record batch with the table's schema.
pub fn to_record_batch<T: Table>(rows: &mut [T]) -> Result<RecordBatch, TableError> {
    rows.sort_by_cached_key(|r| r.sort_key());
    let fields: Vec<FieldRef> = T::fields().into_iter().map(Arc::new).collect();
    serde_arrow::to_record_batch(&fields, &rows).map_err(|source| TableError::Encode {
        table: T::NAME,
        source,
    })
}

/// The writer properties every bundle table uses.
pub fn writer_properties(table: &str, extra: &[(String, String)]) -> WriterProperties {
    format_properties(&BUNDLE_FORMAT, table, extra)
}

/// The writer properties of a table of `format`: the format's version and the table name first in the
/// key-value metadata, then `extra`.
pub fn format_properties(
    format: &TableFormat,
    table: &str,
    extra: &[(String, String)],
) -> WriterProperties {
    let mut kv = vec![
        KeyValue::new(format.version_key.to_string(), format.version.to_string()),
        KeyValue::new(META_TABLE.to_string(), table.to_string()),
    ];
    kv.extend(
        extra
            .iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
    );
    let builder = WriterProperties::builder();
    let builder = match format.encoding {
        Encoding::Records => builder
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_default()))
            .set_statistics_enabled(EnabledStatistics::Chunk)
            .set_max_row_group_row_count(Some(ROW_GROUP_ROWS)),
        Encoding::Small => builder
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).unwrap_or_default()))
            .set_dictionary_enabled(false),
    };
    builder.set_key_value_metadata(Some(kv)).build()
}

/// Encodes `rows` (sorted in place by their key) as a complete Parquet file in memory.
pub fn write_parquet<T: Table>(rows: &mut [T]) -> Result<Vec<u8>, TableError> {
    let batch = to_record_batch(rows)?;
    write_batches::<T>(std::slice::from_ref(&batch), &[])
}

/// Encodes `rows` in the order given as a complete Parquet file in memory, with extra key-value
/// metadata (the analysis tables, whose order is the analysis's).
pub fn write_rows<T: Table>(
    rows: &[T],
    extra_metadata: &[(String, String)],
) -> Result<Vec<u8>, TableError> {
    let fields: Vec<FieldRef> = T::fields().into_iter().map(Arc::new).collect();
    let batch =
        serde_arrow::to_record_batch(&fields, &rows).map_err(|source| TableError::Encode {
            table: T::NAME,
            source,
        })?;
    write_batches::<T>(std::slice::from_ref(&batch), extra_metadata)
}

/// Encodes already-built batches of `T`'s schema as a Parquet file, with extra key-value metadata.
pub fn write_batches<T: Table>(
    batches: &[RecordBatch],
    extra_metadata: &[(String, String)],
) -> Result<Vec<u8>, TableError> {
    let schema = Arc::new(T::arrow_schema());
    let mut out = Vec::new();
    let props = format_properties(T::FORMAT, T::NAME, extra_metadata);
    let perr = |source| TableError::Parquet {
        table: T::NAME,
        source,
    };
    let mut writer = ArrowWriter::try_new(&mut out, schema, Some(props)).map_err(perr)?;
    for b in batches {
        writer.write(b).map_err(perr)?;
    }
    writer.close().map_err(perr)?;
    Ok(out)
}

/// Reads the key-value metadata of a Parquet file.
fn file_metadata<T: Table>(
    builder: &ParquetRecordBatchReaderBuilder<bytes::Bytes>,
) -> Result<(String, Option<String>), TableError> {
    let kv = builder.metadata().file_metadata().key_value_metadata();
    let get = |key: &str| {
        kv.and_then(|kv| kv.iter().find(|e| e.key == key))
            .and_then(|e| e.value.clone())
    };
    let key = T::FORMAT.version_key;
    let version = get(key).ok_or(TableError::MissingVersion {
        table: T::NAME,
        key,
    })?;
    Ok((version, get(META_TABLE)))
}

/// Compares a file's Arrow schema with the table's, column by column: names, types and nullability must
/// match exactly, except that a file of an older minor version may lack nullable columns.
pub fn check_schema<T: Table>(file_schema: &Schema, older_minor: bool) -> Result<(), TableError> {
    let expected = T::fields();
    let mismatch = |detail: String| TableError::SchemaMismatch {
        table: T::NAME,
        detail,
    };
    for f in file_schema.fields() {
        match expected.iter().find(|e| e.name() == f.name()) {
            None => return Err(mismatch(format!("unexpected column `{}`", f.name()))),
            Some(e) if e.data_type() != f.data_type() => {
                return Err(mismatch(format!(
                    "column `{}` has type {} where {} is expected",
                    f.name(),
                    f.data_type(),
                    e.data_type()
                )));
            }
            // A column that became nullable reads files that wrote it as required (every value is
            // present); the reverse would let nulls into a required field.
            Some(e) if f.is_nullable() && !e.is_nullable() => {
                return Err(mismatch(format!(
                    "column `{}` is {} where it should be {}",
                    f.name(),
                    if f.is_nullable() {
                        "nullable"
                    } else {
                        "non-nullable"
                    },
                    if e.is_nullable() {
                        "nullable"
                    } else {
                        "non-nullable"
                    },
                )));
            }
            Some(_) => {}
        }
    }
    for e in &expected {
        if file_schema.field_with_name(e.name()).is_err() && !(older_minor && e.is_nullable()) {
            return Err(mismatch(format!("missing column `{}`", e.name())));
        }
    }
    let order_ok = file_schema.fields().iter().map(|f| f.name()).eq(expected
        .iter()
        .filter(|e| file_schema.field_with_name(e.name()).is_ok())
        .map(|e| e.name()));
    if !order_ok {
        return Err(mismatch("columns are not in the expected order".into()));
    }
    Ok(())
}

/// Decodes a Parquet file of table `T`, checking its table name, schema version and Arrow schema.
/// Files of an older minor version are read, with columns they lack filled with nulls.
pub fn read_parquet<T: Table>(bytes: bytes::Bytes) -> Result<Vec<T>, TableError> {
    let perr = |source| TableError::Parquet {
        table: T::NAME,
        source,
    };
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(perr)?;
    let (version, table) = file_metadata::<T>(&builder)?;
    if let Some(found) = table
        && found != T::NAME
    {
        return Err(TableError::WrongTable {
            table: T::NAME,
            found,
        });
    }
    let current = T::FORMAT.version;
    version_readable(&version, current).map_err(|hint| TableError::UnsupportedVersion {
        table: T::NAME,
        found: version.clone(),
        major: current_major(T::FORMAT),
        current,
        hint,
    })?;
    let older_minor = version != current;
    let file_schema = builder.schema().clone();
    check_schema::<T>(&file_schema, older_minor)?;
    let reader = builder.build().map_err(perr)?;
    let target = Arc::new(T::arrow_schema());
    let mut rows = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|source| TableError::Arrow {
            table: T::NAME,
            source,
        })?;
        let batch = conform(batch, &target).map_err(|source| TableError::Arrow {
            table: T::NAME,
            source,
        })?;
        let mut part: Vec<T> =
            serde_arrow::from_record_batch(&batch).map_err(|source| TableError::Decode {
                table: T::NAME,
                source,
            })?;
        rows.append(&mut part);
    }
    Ok(rows)
}

/// Rebuilds `batch` with exactly `target`'s columns, filling absent (nullable) ones with nulls.
fn conform(
    batch: RecordBatch,
    target: &Arc<Schema>,
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    if batch.schema().fields() == target.fields() {
        return RecordBatch::try_new(target.clone(), batch.columns().to_vec());
    }
    let columns = target
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(c) => c.clone(),
            None => new_null_array(f.data_type(), batch.num_rows()),
        })
        .collect();
    RecordBatch::try_new(target.clone(), columns)
}
