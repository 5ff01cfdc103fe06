"""CSV files as Spark reads them: one record per line (Spark's multiLine off), fields separated by `sep`
and quoted with `"`, nulls where a field equals `nullValue` (default: empty), a header line naming the
columns when `header` is true (else `_c0`, `_c1`, ...), types inferred when `inferSchema` is true (else
text) unless a schema is declared.

Layouts on which Arrow's parser and Spark's (univocity) part ways are refused: a quote inside a field,
a backslash (Spark's escape character), a quoted line break, a line of blanks (Spark skips it), a record
with more or fewer fields than the header, a byte-order mark, compression other than gzip.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv
from pyspark.sql.types import StringType, StructField, StructType

from recsql.catalog.readers.common import Refused, read_bytes, refuse_options
from recsql.catalog.readers.text_values import convert, infer_type

OPTIONS = {"header", "sep", "delimiter", "nullvalue", "inferschema", "encoding", "charset"}
QUOTE, ESCAPE = b'"', b"\\"


def load(
    files: list[Path], options: dict[str, str], declared: StructType | None, timezone: str
) -> tuple[StructType, pa.Table]:
    refuse_options(options, OPTIONS, "CSV")
    if options.get("encoding", options.get("charset", "utf-8")).lower().replace("-", "") != "utf8":
        raise Refused("an encoding other than UTF-8")
    separator = options.get("sep", options.get("delimiter", ","))
    if len(separator) != 1 or separator in '"\\\r\n':
        raise Refused(f"separator {separator!r}")
    header = flag(options, "header")
    null = options.get("nullvalue", "")
    texts_of = [(data, parse(data, separator, null)) for data in map(read_bytes, files)]
    files_read = [(data, part) for data, part in texts_of if part.num_rows]
    if not files_read:
        raise Refused("no records")
    parts = [part for _, part in files_read]
    width = parts[0].num_columns
    if any(part.num_columns != width for part in parts):
        raise Refused("files with different numbers of fields")
    names = header_names(parts[0], null) if header else [f"_c{i}" for i in range(width)]
    rows = pa.concat_tables([part.slice(1 if header else 0).rename_columns(names) for part in parts])
    if declared is not None:
        schema = declared
        texts = [
            rows.column(i) if i < width else pa.chunked_array([pa.nulls(rows.num_rows, pa.string())])
            for i in range(len(declared.fields))
        ]
    elif flag(options, "inferschema"):
        sample = rows.filter(not_the_header([data for data, _ in files_read])) if header else rows
        schema = StructType([StructField(name, infer_type(sample.column(i), name)) for i, name in enumerate(names)])
        texts = rows.columns
    else:
        schema = StructType([StructField(name, StringType()) for name in names])
        texts = rows.columns
    columns = [convert(text, field.dataType, field.name, timezone) for text, field in zip(texts, schema.fields)]
    return schema, pa.table(columns, names=schema.fieldNames())


def flag(options: dict[str, str], key: str) -> bool:
    value = options.get(key, "false").lower()
    if value not in ("true", "false"):
        raise Refused(f"option {key} = {value!r}")
    return value == "true"


def parse(data: bytes, separator: str, null: str) -> pa.Table:
    """The fields of every record as text, columns f0, f1, ...: nulls where a field is empty or the null
    value, as in Spark (which reads a quoted empty field as empty text when the null value is not
    empty: refused)."""
    check_layout(data, separator.encode())
    sep = re.escape(separator.encode())
    if null and re.search(rb"(?m)(?:^|(?<=" + sep + rb'))""(?=' + sep + rb"|\r?$)", data):
        raise Refused("a quoted empty field beside a null value of its own")
    if not data.strip():
        return pa.table({})
    invalid: list[object] = []

    def reject(row: object) -> str:
        invalid.append(row)
        return "skip"

    first_line = data.lstrip(b"\r\n").split(b"\n", 1)[0]
    names = [f"f{i}" for i in range(first_line.count(separator.encode()) + 1)]  # at least its fields
    table = pv.read_csv(
        io.BytesIO(data),
        read_options=pv.ReadOptions(autogenerate_column_names=True),
        parse_options=pv.ParseOptions(
            delimiter=separator,
            quote_char='"',
            double_quote=False,
            escape_char=False,
            newlines_in_values=False,
            ignore_empty_lines=True,
            invalid_row_handler=reject,
        ),
        convert_options=pv.ConvertOptions(
            column_types={name: pa.string() for name in names},
            null_values=[null, ""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=True,
        ),
    )
    if invalid:
        raise Refused("a record whose number of fields differs from the first line's")
    return table


def check_layout(data: bytes, separator: bytes) -> None:
    """Refuse what Arrow's parser and Spark's read differently (see the module's description)."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise Refused("a byte-order mark")
    if re.search(rb"\r(?!\n)", data):
        raise Refused("a line ending in a lone carriage return")
    if re.search(rb"(?m)^[\x00-\x09\x0b\x0c\x0e-\x20]+\r?$", data):
        raise Refused("a line of blanks")
    if QUOTE not in data and ESCAPE not in data:
        return
    sep = re.escape(separator)
    quoted = rb"(?m)(?:^|(?<=" + sep + rb'))"[^"\\\r\n]*"(?=' + sep + rb"|\r?$)"
    rest = re.sub(quoted, b"", data)
    if QUOTE in rest or ESCAPE in rest:
        raise Refused("a quote or backslash inside a field, or a quoted line break")


def not_the_header(files: list[bytes]) -> pa.ChunkedArray:
    """Per record after each file's header, whether Spark infers types from it: its schema inference
    leaves out every line equal to the first file's header line, as text (reading drops only each file's
    first line). Records are non-empty lines here (a quoted line break or a line of blanks is refused)."""
    lines = [non_empty_lines(data) for data in files]
    header_line = lines[0][0]
    if any(file_lines[0] != header_line for file_lines in lines[1:]):
        raise Refused("files whose header lines differ (Spark infers types from the other headers)")
    return pa.chunked_array([pc.not_equal(file_lines[1:], header_line) for file_lines in lines], pa.bool_())


def non_empty_lines(data: bytes) -> pa.Array:
    """The file's non-empty lines, without their line ends, as Spark's line reader gives them."""
    lines = pc.replace_substring_regex(pc.list_flatten(pc.split_pattern(pa.array([data]), b"\n")), "\r$", "")
    return pc.filter(lines, pc.not_equal(pc.binary_length(lines), 0))


def header_names(part: pa.Table, null: str) -> list[str]:
    """Spark's column names from a header record: `_cN` for an empty one (or the null value), and the
    position appended to names that repeat (ignoring case)."""
    values = [None if value in (None, "", null) else value for value in part.slice(0, 1).to_pylist()[0].values()]
    lower = [value.lower() for value in values if value is not None]
    repeated = {value for value in lower if lower.count(value) > 1}
    return [
        f"_c{i}" if value is None else f"{value}{i}" if value.lower() in repeated else value
        for i, value in enumerate(values)
    ]
