"""An opaque relation's query (translator/opaque.py) as Spark SQL: each placeholder table it reads becomes
the rows of the relation it stands for, their columns (positional: c0 .. cN, or a table's own) named as
the query reads them."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from recsql.engine.sql.rules import identifier
from translator.dialect import RecSQL
from translator.ir import Opaque


def opaque_sql(opaque: Opaque, source: Callable[[str], exp.Expr]) -> str:
    """The query over what `source` gives for each relation it reads (a view of its facts), as Spark SQL."""
    reads = {read.placeholder: read for read in opaque.inputs}

    def bound(node: exp.Expr) -> exp.Expr:
        if not (isinstance(node, exp.Table) and node.name in reads):
            return node
        read = reads[node.name]
        rows = source(read.relation)
        rows.set("alias", exp.TableAlias(this=identifier("s"), columns=[identifier(name) for name in read.columns]))
        return exp.Subquery(this=exp.select("*").from_(rows), alias=node.args.get("alias"))

    return opaque.query.transform(bound).sql(dialect=RecSQL)
