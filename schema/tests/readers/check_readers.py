"""Reads every table of a bundle with pyarrow, pandas, polars and DuckDB and compares values, column types
and row counts with what the Rust writer wrote (given as JSON). Any warning is an error.

usage: check_readers.py BUNDLE_DIR EXPECTED_JSON
EXPECTED_JSON: {"tables": {name: {"fields": [[name, arrow_type, nullable], ...], "rows": [{...}, ...]}}}
where timestamps are integers (microseconds since the epoch, UTC).
"""
import datetime as dt
import json
import math
import sys
import warnings

warnings.simplefilter("error")

import duckdb  # noqa: E402
import pandas as pd  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

UTC = dt.timezone.utc
failures = []


def fail(msg):
    failures.append(msg)


def ts(us):
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=us)


def expected_value(kind, v):
    if v is None:
        return None
    if kind == "ts":
        return ts(v)
    return v


def kind_of(arrow_type):
    if arrow_type.startswith("Timestamp"):
        return "ts"
    if arrow_type.startswith("List("):
        return "list_i64" if "Int64" in arrow_type else "list_str"
    return {"Utf8": "str", "Int64": "i64", "Float64": "f64", "Boolean": "bool"}[arrow_type]


def same(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=0, abs_tol=0)
    return a == b


def compare(reader, table, fields, rows, got_rows):
    if len(got_rows) != len(rows):
        fail(f"{reader}: {table}: {len(got_rows)} rows, expected {len(rows)}")
        return
    for i, (exp, got) in enumerate(zip(rows, got_rows)):
        for name, arrow_type, _nullable in fields:
            e = expected_value(kind_of(arrow_type), exp[name])
            g = got[name]
            if not same(e, g):
                fail(f"{reader}: {table}: row {i} column {name}: got {g!r}, expected {e!r}")
                return


def null_to_none(v):
    if v is None:
        return None
    if hasattr(v, "tolist"):  # a list cell (a numpy array in pandas)
        return v.tolist()
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v


PA_TYPES = {
    "str": pa.string(),
    "i64": pa.int64(),
    "f64": pa.float64(),
    "bool": pa.bool_(),
    "ts": pa.timestamp("us", tz="UTC"),
    "list_i64": pa.list_(pa.field("element", pa.int64(), nullable=False)),
    "list_str": pa.list_(pa.field("element", pa.string(), nullable=False)),
}
PL_TYPES = {
    "str": pl.String,
    "i64": pl.Int64,
    "f64": pl.Float64,
    "bool": pl.Boolean,
    "ts": pl.Datetime("us", "UTC"),
    "list_i64": pl.List(pl.Int64),
    "list_str": pl.List(pl.String),
}
DUCK_TYPES = {
    "str": "VARCHAR",
    "i64": "BIGINT",
    "f64": "DOUBLE",
    "bool": "BOOLEAN",
    "ts": "TIMESTAMP WITH TIME ZONE",
    "list_i64": "BIGINT[]",
    "list_str": "VARCHAR[]",
}


def check_pyarrow(path, table, fields, rows):
    t = pq.read_table(path)
    for name, arrow_type, nullable in fields:
        f = t.schema.field(name)
        want = PA_TYPES[kind_of(arrow_type)]
        if not f.type.equals(want):
            fail(f"pyarrow: {table}.{name}: type {f.type}, expected {want}")
        if f.nullable != nullable:
            fail(f"pyarrow: {table}.{name}: nullable={f.nullable}, expected {nullable}")
    md = pq.read_metadata(path).metadata or {}
    if md.get(b"agentrank.schema_version") is None or md.get(b"agentrank.table") != table.encode():
        fail(f"pyarrow: {table}: key-value metadata lacks agentrank.schema_version / agentrank.table")
    compare("pyarrow", table, fields, rows, t.to_pylist())


def check_pandas(path, table, fields, rows):
    # numpy_nullable keeps 64-bit integers exact in columns that hold nulls (the default backend would
    # turn them into float64 and lose precision above 2**53); the downloads page says so.
    df = pd.read_parquet(path, dtype_backend="numpy_nullable")
    for name, arrow_type, _ in fields:
        k = kind_of(arrow_type)
        dtype = df[name].dtype
        ok = {
            "str": pd.api.types.is_string_dtype(dtype),
            "i64": str(dtype) == "Int64",
            "f64": str(dtype) == "Float64",
            "bool": str(dtype) == "boolean",
            "ts": isinstance(dtype, pd.DatetimeTZDtype) and str(dtype.tz) == "UTC" and dtype.unit == "us",
            "list_i64": str(dtype) == "object",
            "list_str": str(dtype) == "object",
        }[k]
        if not ok:
            fail(f"pandas: {table}.{name}: dtype {dtype} is not the {k} type expected")
    got = []
    for rec in df.to_dict("records"):
        row = {}
        for name, arrow_type, _ in fields:
            v = null_to_none(rec[name])
            if v is not None and kind_of(arrow_type) == "ts":
                v = v.to_pydatetime()
            elif v is not None and kind_of(arrow_type) == "i64":
                v = int(v)
            elif v is not None and kind_of(arrow_type) == "bool":
                v = bool(v)
            elif v is not None and kind_of(arrow_type) == "f64":
                v = float(v)
            row[name] = v
        got.append(row)
    compare("pandas", table, fields, rows, got)


def check_polars(path, table, fields, rows):
    df = pl.read_parquet(path)
    for name, arrow_type, _ in fields:
        want = PL_TYPES[kind_of(arrow_type)]
        if df.schema[name] != want:
            fail(f"polars: {table}.{name}: dtype {df.schema[name]}, expected {want}")
    compare("polars", table, fields, rows, df.to_dicts())


def check_duckdb(path, table, fields, rows):
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    rel = con.sql(f"SELECT * FROM read_parquet('{path}')")
    types = dict(zip(rel.columns, [str(t) for t in rel.types]))
    for name, arrow_type, _ in fields:
        want = DUCK_TYPES[kind_of(arrow_type)]
        if types.get(name) != want:
            fail(f"duckdb: {table}.{name}: type {types.get(name)}, expected {want}")
    got = [dict(zip(rel.columns, r)) for r in rel.fetchall()]
    compare("duckdb", table, fields, rows, got)
    kv = con.sql(f"SELECT decode(key), decode(value) FROM parquet_kv_metadata('{path}')").fetchall()
    if ("agentrank.table", table) not in kv:
        fail(f"duckdb: {table}: key-value metadata agentrank.table not visible: {kv}")
    n = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchall()[0][0]
    if n != len(rows):
        fail(f"duckdb: {table}: count(*) = {n}, expected {len(rows)}")


def main():
    bundle, expected_path = sys.argv[1], sys.argv[2]
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    checked = 0
    for table, spec in expected["tables"].items():
        path = f"{bundle}/{table}.parquet"
        fields, rows = spec["fields"], spec["rows"]
        for check in (check_pyarrow, check_pandas, check_polars, check_duckdb):
            try:
                check(path, table, fields, rows)
            except Warning as w:
                fail(f"{check.__name__[6:]}: {table}: warning: {w}")
            except Exception as e:  # noqa: BLE001 - every reader error is a finding
                fail(f"{check.__name__[6:]}: {table}: {type(e).__name__}: {e}")
        checked += 1
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print(f"ok: {checked} tables read by pyarrow {pa.__version__}, pandas {pd.__version__}, "
          f"polars {pl.__version__}, duckdb {duckdb.__version__}")


main()
