"""DELETE, UPDATE and MERGE as queries: each statement becomes the query of the table's new rows, the
queries counting the rows it affects and the query of the files holding them, run by the ordinary
pipeline over the table's snapshot; the new rows replace those files in one commit. Conditions may use
anything a WHERE clause may, and read the queries of the statement's WITH clause (each query made here
is given that clause, `Rewrite.within`)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from sqlglot import exp

from recsql.errors import NotSupportedError, ProgrammingError
from recsql.storage.names import FILE_COLUMN, FILES_MARK
from translator.errors import position_of

MATCHED = "__recsql_matched"  # a source column that is TRUE on every source row: NULL after a LEFT JOIN


@dataclass
class Rewrite:
    """What a statement does to its table: the query of the rows it keeps or changes (read from the files
    holding changed rows), the query of the rows it adds, and the queries whose counts make its row
    count."""

    kept: exp.Query | None  # None: the table's rows stay as they are
    added: exp.Query | None
    changes: exp.Query | None = None  # per file of the table, the rows of it the statement changes
    whole: bool = False  # rewrite every file: the statement reads its table elsewhere too
    inserts: exp.Query | None = None  # the count of the rows it adds
    duplicates: exp.Query | None = None  # MERGE: more rows than the table has means a row matched twice

    def within(self, ctes: exp.With | None) -> Rewrite:
        """The same queries, each reading the statement's WITH queries."""
        return replace(
            self,
            **{
                field.name: with_ctes(query, ctes)
                for field in fields(self)
                if isinstance(query := getattr(self, field.name), exp.Query)
            },
        )


def with_ctes(query: exp.Expression, ctes: exp.With | None) -> exp.Expression:
    """`query` with the WITH clause of its statement before its own (whose queries may read them); a
    VALUES list holds only constants, so it reads none."""
    if ctes is None or not isinstance(query, exp.Query):
        return query
    query = query.copy()
    own = query.args.get("with_")
    merged = ctes.copy()
    if own is not None:
        merged.set("expressions", [*merged.expressions, *own.expressions])
        merged.set("recursive", bool(merged.args.get("recursive") or own.args.get("recursive")))
    query.set("with_", merged)
    return query


def statement_ctes(statement: exp.Expression, table: str) -> exp.With | None:
    """The WITH clause of a DELETE, UPDATE or MERGE of `table`. Its queries may not be called `table`:
    the statement's queries read the table by that name."""
    ctes = statement.args.get("with_")
    for cte in ctes.expressions if ctes is not None else ():
        if cte.alias_or_name.lower() == table:
            raise NotSupportedError(
                f"WITH {cte.alias_or_name}: a query of the WITH clause of {statement.key.upper()} "
                f"cannot take the name of the table it changes",
                *position_of(cte),
            )
    return ctes


def is_true(condition: exp.Expression | None) -> exp.Expression:
    """TRUE where the condition holds; FALSE where it is false or NULL (as a WHERE clause treats it)."""
    if condition is None:
        return exp.true()
    return exp.func("coalesce", exp.paren(condition.copy()), exp.false())


def count_where(source: exp.Expression, condition: exp.Expression, joins: list[exp.Expression] = ()) -> exp.Query:
    query = exp.select(exp.func("count", exp.Star())).from_(source.copy())
    for join in joins:
        query = query.join(join.copy())
    return query.where(condition)


def target_table(node: exp.Expression, statement: str) -> tuple[str, str]:
    """The table a statement changes and the name its conditions call it by."""
    if isinstance(node, exp.Table) and node.args.get("db"):
        raise NotSupportedError(f"{statement} changes recsql's own tables only, not '{node.sql()}' of Spark's catalog")
    if not isinstance(node, exp.Table):
        raise NotSupportedError(f"{statement} needs a table name")
    return node.name.lower(), (node.alias or node.name)


def delete(statement: exp.Delete, columns: tuple[str, ...]) -> Rewrite:
    name, alias = target_table(statement.this, "DELETE")
    where = statement.args.get("where")
    source = table_source(name, alias)
    condition = where.this if where is not None else exp.true()
    if has_subquery_predicate(condition):
        kept = select_columns(columns, alias).from_(source).where(not_among(columns, alias, name, condition))
    else:
        kept = select_columns(columns, alias).from_(source).where(exp.not_(is_true(condition)))
    return Rewrite(kept, None, *changes(statement, name, alias, condition))


def update(statement: exp.Update, columns: tuple[str, ...]) -> Rewrite:
    name, alias = target_table(statement.this, "UPDATE")
    if statement.args.get("from_") or statement.args.get("joins"):
        raise NotSupportedError("UPDATE ... FROM is not supported; use MERGE INTO")
    where = statement.args.get("where")
    condition = where.this if where is not None else exp.true()
    assignments = assignments_of(statement.expressions, columns, name)
    source = table_source(name, alias)
    if has_subquery_predicate(condition):  # the changed rows, then the others
        items = [
            exp.alias_(
                assignments.get(column, exp.column(column, table=alias, quoted=True)).copy(), column, quoted=True
            )
            for column in columns
        ]
        changed = exp.select(*items).from_(source.copy()).where(condition.copy())
        kept = select_columns(columns, alias).from_(source).where(not_among(columns, alias, name, condition))
        return Rewrite(kept, changed, *changes(statement, name, alias, condition))
    holds = is_true(condition)
    items = [
        exp.alias_(
            exp.Case(
                ifs=[exp.If(this=holds.copy(), true=assignments[column].copy())],
                default=exp.column(column, table=alias, quoted=True),
            ),
            column,
            quoted=True,
        )
        if column in assignments
        else exp.column(column, table=alias, quoted=True)
        for column in columns
    ]
    return Rewrite(exp.select(*items).from_(source), None, *changes(statement, name, alias, condition))


def changes(
    statement: exp.Expression, name: str, alias: str, condition: exp.Expression, joins: list[exp.Expression] = ()
) -> tuple[exp.Query, bool]:
    """The files holding the target rows a statement changes, with how many it changes in each (its
    row count, and the files it rewrites); and whether it must rewrite every file instead, as it does
    when it reads its target elsewhere too (that read must see all of the rows)."""
    file = exp.column(FILE_COLUMN, table=alias, quoted=True)
    query = exp.select(file, exp.func("count", exp.Star())).from_(table_source(name + FILES_MARK, alias))
    for join in joins:
        query = query.join(join.copy())
    whole = sum(1 for table in statement.find_all(exp.Table) if table.name.lower() == name) > 1
    return query.where(condition.copy()).group_by(file.copy()), whole


def has_subquery_predicate(condition: exp.Expression) -> bool:
    """EXISTS / IN (SELECT ...): the translator takes these only as conditions of a WHERE clause, not
    inside an expression such as coalesce(...)."""
    return condition.find(exp.Exists) is not None or any(
        node.args.get("query") is not None for node in condition.find_all(exp.In)
    )


def not_among(columns: tuple[str, ...], alias: str, name: str, condition: exp.Expression) -> exp.Expression:
    """The rows for which `condition` is not true, as the rows equal to none for which it is: identical
    rows agree on any condition, so this keeps duplicates as they are (tables are bags)."""
    hits = "__recsql_hits"
    matching = (
        select_columns(columns, alias)
        .distinct()
        .from_(table_source(name, alias))
        .where(condition.copy())
        .subquery(hits)
    )
    equal = [
        exp.NullSafeEQ(
            this=exp.column(column, table=hits, quoted=True), expression=exp.column(column, table=alias, quoted=True)
        )
        for column in columns
    ]
    return exp.Exists(this=exp.select("1").from_(matching).where(exp.and_(*equal))).not_()


def merge(statement: exp.Merge, columns: tuple[str, ...], source_columns: tuple[str, ...]) -> Rewrite:
    """MERGE INTO t USING s ON cond WHEN ...: clauses of each kind are tried in order and the first whose
    condition holds acts; a target row no clause applies to stays as it is."""
    name, alias = target_table(statement.this, "MERGE")
    source, source_alias = merge_source(statement.args["using"])
    whens = statement.args["whens"].expressions
    matched = [when for when in whens if when.args.get("matched")]
    by_source = [when for when in whens if not when.args.get("matched") and when.args.get("source")]
    by_target = [when for when in whens if not when.args.get("matched") and not when.args.get("source")]
    merging = Merging(statement, name, alias, source, source_alias, columns, source_columns)
    if matched:
        rewrite = merging.joined(matched, by_source)
    elif by_source:
        rewrite = merging.unmatched(by_source)
    else:
        rewrite = Rewrite(None, None)
    if by_target:
        rewrite.added, rewrite.inserts = merging.inserted(by_target)
    return rewrite


@dataclass
class Merging:
    """The queries of one MERGE statement."""

    statement: exp.Merge
    name: str
    alias: str
    source: exp.Expression
    source_alias: str
    columns: tuple[str, ...]
    source_columns: tuple[str, ...]

    @property
    def target(self) -> exp.Table:
        return table_source(self.name, self.alias)

    @property
    def on(self) -> exp.Expression:
        return self.statement.args["on"].copy()

    def joined(self, matched: list[exp.When], by_source: list[exp.When]) -> Rewrite:
        """With WHEN MATCHED clauses: each target row beside its matching source row (a LEFT JOIN; a
        target row matching two source rows is an error, found by counting the join's rows)."""
        is_matched = exp.column(MATCHED, table=self.source_alias, quoted=True).is_(exp.null()).not_()
        clauses = [(exp.and_(is_matched.copy(), is_true(when.args.get("condition"))), when) for when in matched]
        clauses += [
            (exp.and_(exp.not_(is_matched.copy()), is_true(when.args.get("condition"))), when) for when in by_source
        ]
        flagged = exp.Subquery(
            this=exp.select(exp.Star(), exp.alias_(exp.true(), MATCHED, quoted=True)).from_(self.source.copy()),
            alias=exp.TableAlias(this=exp.to_identifier(self.source_alias)),
        )
        join = exp.Join(this=flagged, side="LEFT", on=self.on)
        items, deleted, acted = self.acting(clauses)
        kept = exp.select(*items).from_(self.target).join(join).where(exp.not_(deleted))
        return Rewrite(
            kept,
            None,
            *changes(self.statement, self.name, self.alias, acted, [join]),
            duplicates=count_where(self.target, exp.true(), [join]),
        )

    def unmatched(self, by_source: list[exp.When]) -> Rewrite:
        """Only WHEN NOT MATCHED BY SOURCE clauses: the target rows without a match change, the others
        stay (however many source rows they match)."""
        match = exp.Exists(this=exp.select("1").from_(self.source.copy()).where(self.on))
        clauses = [(is_true(when.args.get("condition")), when) for when in by_source]
        items, deleted, acted = self.acting(clauses)
        changed = exp.select(*items).from_(self.target).where(exp.and_(match.copy().not_(), exp.not_(deleted)))
        unchanged = select_columns(self.columns, self.alias).from_(self.target).where(match.copy())
        condition = exp.and_(match.copy().not_(), acted)
        return Rewrite(
            exp.union(changed, unchanged, distinct=False),
            None,
            *changes(self.statement, self.name, self.alias, condition),
        )

    def acting(self, clauses: list[tuple[exp.Expression, exp.When]]) -> tuple[list, exp.Expression, exp.Expression]:
        """Per target column its value after the first clause that acts; whether that clause deletes the
        row; whether any clause acts."""
        items = []
        for column in self.columns:
            original = exp.column(column, table=self.alias, quoted=True)
            ifs = [
                exp.If(
                    this=condition.copy(),
                    true=new_value(when, column, self.columns, self.alias, self.source_alias, self.source_columns),
                )
                for condition, when in clauses
            ]
            items.append(exp.alias_(exp.Case(ifs=ifs, default=original), column, quoted=True))
        deleted = exp.Case(
            ifs=[
                exp.If(this=condition.copy(), true=exp.true() if is_delete(when) else exp.false())
                for condition, when in clauses
            ],
            default=exp.false(),
        )
        return items, deleted, exp.or_(*[condition.copy() for condition, _ in clauses])

    def inserted(self, by_target: list[exp.When]) -> tuple[exp.Query, exp.Query]:
        """The rows WHEN NOT MATCHED clauses insert: source rows matching no target row; and their count."""
        absent = exp.Exists(this=exp.select("1").from_(self.target).where(self.on)).not_()
        clauses = [(is_true(when.args.get("condition")), when) for when in by_target]
        items = [
            exp.alias_(
                exp.Case(
                    ifs=[
                        exp.If(
                            this=condition.copy(),
                            true=inserted_value(when, column, self.columns, self.source_alias, self.source_columns),
                        )
                        for condition, when in clauses
                    ]
                ),
                column,
                quoted=True,
            )
            for column in self.columns
        ]
        chosen = exp.and_(absent, exp.or_(*[condition.copy() for condition, _ in clauses]))
        return exp.select(*items).from_(self.source.copy()).where(chosen), count_where(self.source, chosen)


# ------------------------------------------------------------------ parts


def table_source(name: str, alias: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name), alias=exp.TableAlias(this=exp.to_identifier(alias)))


def select_columns(columns: tuple[str, ...], alias: str) -> exp.Select:
    return exp.select(*[exp.column(column, table=alias, quoted=True) for column in columns])


def merge_source(using: exp.Expression) -> tuple[exp.Expression, str]:
    """The source of a MERGE and the name its conditions call it by."""
    if isinstance(using, exp.Table):
        return using.copy(), using.alias or using.name
    if isinstance(using, exp.Subquery) and using.alias:
        return using.copy(), using.alias
    raise ProgrammingError("MERGE INTO ... USING takes a table or a subquery with an alias")


def assignments_of(items: list[exp.Expression], columns: tuple[str, ...], table: str) -> dict[str, exp.Expression]:
    """SET col = value, ...: the value per column name."""
    assignments = {}
    for item in items:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise ProgrammingError("SET takes column = value, ...")
        column = item.this.name.lower()
        if column not in columns:
            raise ProgrammingError(f"table '{table}' has no column '{item.this.name}'")
        if column in assignments:
            raise ProgrammingError(f"column '{column}' of '{table}' is set twice")
        assignments[column] = item.expression
    return assignments


def is_delete(when: exp.When) -> bool:
    then = when.args["then"]
    return isinstance(then, exp.Var) and then.name.upper() == "DELETE"


def new_value(
    when: exp.When,
    column: str,
    columns: tuple[str, ...],
    alias: str,
    source_alias: str,
    source_columns: tuple[str, ...],
) -> exp.Expression:
    """A target column's value after a MATCHED or NOT MATCHED BY SOURCE clause."""
    then = when.args["then"]
    original = exp.column(column, table=alias, quoted=True)
    if is_delete(when):
        return original.copy()
    if not isinstance(then, exp.Update):
        raise ProgrammingError("WHEN MATCHED takes THEN UPDATE SET ... or THEN DELETE")
    if len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star):
        if not when.args.get("matched"):
            raise ProgrammingError("UPDATE SET * needs a matching source row: use it in WHEN MATCHED")
        return source_column(column, source_alias, source_columns)
    return assignments_of(then.expressions, columns, alias).get(column, original).copy()


def inserted_value(
    when: exp.When, column: str, columns: tuple[str, ...], source_alias: str, source_columns: tuple[str, ...]
) -> exp.Expression:
    """A target column's value in a row a NOT MATCHED clause inserts (NULL for a column it does not list)."""
    then = when.args["then"]
    if not isinstance(then, exp.Insert):
        raise ProgrammingError("WHEN NOT MATCHED takes THEN INSERT")
    if isinstance(then.this, exp.Star):
        return source_column(column, source_alias, source_columns)
    names = [c.name.lower() for c in then.this.expressions]
    unknown = [name for name in names if name not in columns]
    if unknown:
        raise ProgrammingError(f"INSERT names columns the table does not have: {', '.join(unknown)}")
    values = then.expression.expressions if isinstance(then.expression, exp.Tuple) else [then.expression]
    if len(names) != len(values):
        raise ProgrammingError(f"INSERT lists {len(names)} columns but {len(values)} values")
    return values[names.index(column)].copy() if column in names else exp.null()


def source_column(column: str, source_alias: str, source_columns: tuple[str, ...]) -> exp.Expression:
    if column not in source_columns:
        raise ProgrammingError(f"the MERGE source has no column '{column}' for UPDATE SET * / INSERT *")
    return exp.column(column, table=source_alias, quoted=True)
