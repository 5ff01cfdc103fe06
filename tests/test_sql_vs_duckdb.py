"""Plain (non-recursive) SQL through recsql, compared with DuckDB as the independent reference.

Every test runs the same query (or, where the dialects differ, an equivalent DuckDB text) on recsql and on an
in-memory DuckDB loaded with the same pandas DataFrames, and compares the answers: as multisets unless the query
orders its result totally, in which case the order must match too.

DuckDB is set to Spark's NULL ordering (NULLS FIRST for ASC, NULLS LAST for DESC), so ORDER BY without an explicit
NULLS clause can be compared as well.
"""

from __future__ import annotations

import datetime
from collections import Counter

import duckdb_reference
import pandas as pd
import pytest
from duckdb_reference import normalize, q, register_both
from spark_jobs import spark_jobs
from strategies import under

D = datetime.date

# ---------------------------------------------------------------------------------------------------------------
# Data (table names prefixed with sq_ so other modules do not collide)
# ---------------------------------------------------------------------------------------------------------------

SQ_EMP = pd.DataFrame(
    {
        "id": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
        "name": [
            "Alice",
            "Bob",
            "Carol",
            "Dave",
            "Eve",
            "Frank",
            "Grace",
            "Heidi",
            "Ivan",
            "Judy",
            "Mallory",
            "O'Neil",
        ],
        "dept_id": pd.array([1, 1, 2, 2, 3, 3, 1, None, 2, 4, None, 3], dtype="Int64"),
        "salary": [9000, 5000, 7000, 5000, 6500, 3000, 8000, 4000, 7000, 2500, 6000, 4500],
        "manager_id": pd.array([None, 1, 1, 3, 1, 5, 1, 2, 3, 5, None, 5], dtype="Int64"),
        "hired": [
            D(1990, 1, 15),
            D(1994, 12, 31),
            D(1995, 1, 1),
            D(1996, 7, 4),
            D(1992, 3, 30),
            D(1999, 11, 11),
            D(1991, 5, 5),
            D(1997, 2, 28),
            D(1995, 6, 15),
            D(2000, 1, 31),
            D(1993, 8, 8),
            D(1998, 10, 1),
        ],
        "city": [
            "  Paris",
            "London ",
            " Rome ",
            "Paris",
            None,
            "Berlin",
            "London",
            "Rome",
            None,
            "  Oslo  ",
            "Paris",
            "Madrid",
        ],
    }
)

SQ_DEPT = pd.DataFrame(
    {
        "id": [1, 2, 3, 4, 5],
        "dname": ["Research", "Sales", "Ops", "Legal", "Empty"],
        "loc": ["Paris", "London", None, "Rome", "Oslo"],
        "budget": [500, 300, 200, 50, 10],
    }
)

SQ_PROJ = pd.DataFrame(
    {
        "pid": [10, 11, 12, 13, 14, 15],
        "pname": ["Apollo", "Borealis", "Cygnus", "Draco", "Eridanus", "Fornax"],
        "dept_id": pd.array([1, 1, 2, 3, None, 5], dtype="Int64"),
        "pbudget": [1000, 250, 400, 800, 100, 50],
    }
)

SQ_ASSIGN = pd.DataFrame(
    {
        "emp_id": [1, 1, 2, 3, 3, 4, 5, 7, 7, 9, 12, 12, 6],
        "pid": [10, 11, 10, 12, 14, 12, 13, 10, 11, 99, 13, 15, 13],
        "hours": [20, 5, 12, 30, 8, 10, 16, 4, 25, 7, 9, 11, 3],
    }
)

TABLES = {"sq_emp": SQ_EMP, "sq_dept": SQ_DEPT, "sq_proj": SQ_PROJ, "sq_assign": SQ_ASSIGN}


# ---------------------------------------------------------------------------------------------------------------
# Fixtures and the comparison (tests/duckdb_reference.py, plus the DB-API checks of this module)
# ---------------------------------------------------------------------------------------------------------------


duck, sq_tables = duckdb_reference.reference_fixtures(TABLES, "sq_tables")


def check(cur, duck, sql, **options):
    """`duckdb_reference.check`, and the DB-API shape of the cursor: 7-item description entries, a rowcount that is
    -1 or the number of rows."""
    got = duckdb_reference.check(cur, duck, sql, **options)
    assert all(len(col) == 7 for col in cur.description), cur.description
    assert cur.rowcount in (-1, len(got)), cur.rowcount
    return got


# ---------------------------------------------------------------------------------------------------------------
# The query catalogue
# ---------------------------------------------------------------------------------------------------------------

PROJECTION = [
    q("SELECT id, name, salary FROM sq_emp", names=True, id="plain_columns"),
    q("SELECT * FROM sq_dept", names=True, id="star"),
    q(
        "SELECT id, salary * 2 + 100 AS a, salary - id AS b, salary / 4 AS c, salary % 7 AS d, -salary AS e, "
        "(salary + id) * (id - 3) AS f FROM sq_emp",
        names=True,
        id="arithmetic",
    ),
    q(
        "SELECT id, salary * 1.1 AS raised, round(salary / 7.0, 2) AS r, abs(id - 6) AS dist FROM sq_emp",
        names=True,
        id="decimal_arithmetic",
    ),
    q("SELECT 1 + 2 AS three, 'x' AS s, 2.5 * 4 AS f, 7 / 2 AS half", names=True, id="select_without_from"),
    q(
        "SELECT e.id, e.salary / d.budget AS ratio FROM sq_emp e JOIN sq_dept d ON e.dept_id = d.id",
        id="arithmetic_across_tables",
    ),
]

WHERE = [
    q("SELECT id FROM sq_emp WHERE salary > 5000 AND dept_id = 1", id="and"),
    q("SELECT id FROM sq_emp WHERE salary < 4000 OR dept_id = 3", id="or"),
    q("SELECT id FROM sq_emp WHERE NOT (salary > 5000 OR dept_id = 1)", id="not_three_valued"),
    q("SELECT id FROM sq_emp WHERE NOT dept_id = 2", id="not_null_excluded"),
    q(
        "SELECT id FROM sq_emp WHERE (salary >= 6000 AND NOT dept_id = 1) OR (city = 'Paris' AND id > 3)",
        id="and_or_not_nested",
    ),
    q("SELECT id, salary FROM sq_emp WHERE salary BETWEEN 4500 AND 7000", id="between"),
    q("SELECT id FROM sq_emp WHERE salary NOT BETWEEN 4500 AND 7000", id="not_between"),
    q("SELECT id FROM sq_emp WHERE dept_id IN (1, 3)", id="in_list"),
    q("SELECT id FROM sq_emp WHERE name IN ('Bob', 'Eve', 'Zed')", id="in_list_strings"),
    q("SELECT id FROM sq_emp WHERE dept_id NOT IN (1, 2)", id="not_in_list_nulls"),
    q("SELECT name FROM sq_emp WHERE name LIKE '%a%'", id="like_contains"),
    q("SELECT name FROM sq_emp WHERE name LIKE '_a%'", id="like_underscore"),
    q("SELECT name FROM sq_emp WHERE name NOT LIKE '%e' AND name LIKE 'M%' OR name LIKE 'J%'", id="not_like"),
    q("SELECT id FROM sq_emp WHERE dept_id IS NULL", id="is_null"),
    q("SELECT id FROM sq_emp WHERE dept_id IS NOT NULL AND manager_id IS NOT NULL", id="is_not_null"),
    q("SELECT id FROM sq_emp WHERE manager_id IS NULL OR city IS NULL", id="is_null_or"),
    q("SELECT id FROM sq_emp WHERE dept_id = NULL", allow_empty=True, id="equals_null_is_empty"),
    q("SELECT id FROM sq_emp WHERE name < 'F' AND hired > DATE '1990-06-01'", id="string_and_date_compare"),
]

JOINS = [
    q("SELECT e.name, d.dname FROM sq_emp e JOIN sq_dept d ON e.dept_id = d.id", id="inner_join_on"),
    q(
        "SELECT e.name, d.dname FROM sq_emp e INNER JOIN sq_dept d ON d.id = e.dept_id WHERE d.budget > 100",
        id="inner_join_where",
    ),
    q("SELECT e.name, d.dname FROM sq_emp e, sq_dept d WHERE e.dept_id = d.id AND d.budget > 100", id="comma_join"),
    q(
        "SELECT e.name, d.dname FROM sq_emp e JOIN sq_dept d ON e.dept_id = d.id AND e.salary > 5000",
        id="join_on_with_filter",
    ),
    q("SELECT e.name, m.name AS manager FROM sq_emp e JOIN sq_emp m ON e.manager_id = m.id", id="self_join"),
    q("SELECT a.id, b.id FROM sq_emp a, sq_emp b WHERE a.dept_id = b.dept_id AND a.id < b.id", id="self_join_pairs"),
    q(
        "SELECT e.name, m.name, mm.name FROM sq_emp e JOIN sq_emp m ON e.manager_id = m.id "
        "JOIN sq_emp mm ON m.manager_id = mm.id",
        id="self_join_twice",
    ),
    q(
        "SELECT e.name, p.pname, a.hours FROM sq_emp e JOIN sq_assign a ON e.id = a.emp_id "
        "JOIN sq_proj p ON p.pid = a.pid",
        id="three_tables",
    ),
    q(
        "SELECT e.name, p.pname, d.dname FROM sq_emp e, sq_assign a, sq_proj p, sq_dept d "
        "WHERE e.id = a.emp_id AND a.pid = p.pid AND p.dept_id = d.id AND a.hours >= 5",
        id="four_tables_comma",
    ),
    q(
        "SELECT d.dname, sum(a.hours) AS h, count(*) AS n FROM sq_dept d JOIN sq_proj p ON p.dept_id = d.id "
        "JOIN sq_assign a ON a.pid = p.pid JOIN sq_emp e ON e.id = a.emp_id WHERE e.salary > 3000 "
        "GROUP BY d.dname",
        id="four_tables_grouped",
    ),
    q(
        "SELECT e.name, d2.dname FROM sq_emp e JOIN sq_assign a ON a.emp_id = e.id JOIN sq_proj p ON p.pid = a.pid "
        "JOIN sq_dept d2 ON d2.id = p.dept_id WHERE e.dept_id <> p.dept_id",
        id="four_tables_cross_dept",
    ),
    q("SELECT d.id, p.pid FROM sq_dept d CROSS JOIN sq_proj p WHERE d.id < 3", id="cross_join"),
    q("SELECT e.id, p.pid FROM sq_emp e JOIN sq_proj p ON e.dept_id = p.dept_id", id="join_nullable_keys"),
    q("SELECT a.emp_id, p.pname FROM sq_assign a JOIN sq_proj p ON a.pid = p.pid", id="join_dangling_key"),
    q("SELECT e.id, d.dname FROM sq_emp e LEFT JOIN sq_dept d ON e.dept_id = d.id", id="left_join"),
]

SUBQUERIES = [
    q(
        "SELECT t.dept_id, t.total FROM (SELECT dept_id, sum(salary) AS total FROM sq_emp GROUP BY dept_id) t "
        "WHERE t.total > 10000",
        id="from_subquery_grouped",
    ),
    q(
        "SELECT e.name FROM sq_emp e JOIN (SELECT dept_id, max(salary) AS mx FROM sq_emp GROUP BY dept_id) m "
        "ON e.dept_id = m.dept_id AND e.salary = m.mx",
        id="join_with_subquery",
    ),
    q(
        "SELECT x.n, x.s FROM (SELECT name AS n, salary AS s FROM (SELECT * FROM sq_emp WHERE salary > 4000) y "
        "WHERE y.dept_id IS NOT NULL) x WHERE x.s < 8000",
        id="nested_subqueries",
    ),
    q("SELECT name FROM sq_emp WHERE id IN (SELECT emp_id FROM sq_assign WHERE hours > 10)", id="in_subquery"),
    q("SELECT dname FROM sq_dept WHERE id IN (SELECT dept_id FROM sq_emp WHERE salary > 6000)", id="in_subquery_2"),
    q("SELECT name FROM sq_emp WHERE id NOT IN (SELECT emp_id FROM sq_assign)", id="not_in_subquery"),
    q(
        "SELECT name FROM sq_emp WHERE (id NOT IN (SELECT emp_id FROM sq_assign)) AND ((id > 1))",
        id="not_in_subquery_in_parentheses",
    ),
    q(
        "SELECT pname FROM sq_proj WHERE pid NOT IN (SELECT pid FROM sq_assign WHERE hours > 10)",
        id="not_in_subquery_filtered",
    ),
    q(
        "SELECT e.name, (SELECT d.dname FROM sq_dept d WHERE d.id = e.dept_id) AS dname FROM sq_emp e",
        id="scalar_subquery_without_a_row_is_null",
    ),
    q(
        "SELECT name, (SELECT max(pbudget) FROM sq_proj WHERE sq_proj.pid > 100) AS top FROM sq_emp",
        id="scalar_subquery_on_empty_input",
    ),
    q("SELECT count(*) FROM sq_emp WHERE dept_id NOT IN (SELECT dept_id FROM sq_proj)", id="not_in_subquery_with_null"),
    q(
        "SELECT pname FROM sq_proj WHERE dept_id NOT IN (SELECT id FROM sq_dept WHERE budget > 100)",
        id="not_in_null_probe",
    ),
    q(
        "SELECT pname FROM sq_proj WHERE dept_id NOT IN (SELECT id FROM sq_dept WHERE budget > 1000)",
        id="not_in_empty_subquery_null_probe",
    ),
    q(
        "SELECT d.dname FROM sq_dept d WHERE d.id NOT IN (SELECT e.dept_id FROM sq_emp e WHERE e.city = d.loc)",
        id="not_in_correlated_with_null",
    ),
    q(
        "SELECT d.dname FROM sq_dept d WHERE EXISTS (SELECT 1 FROM sq_emp e WHERE e.dept_id = d.id AND "
        "e.salary > 6000)",
        id="exists_correlated",
    ),
    q(
        "SELECT e.name FROM sq_emp e WHERE NOT EXISTS (SELECT * FROM sq_assign a WHERE a.emp_id = e.id)",
        id="not_exists_correlated",
    ),
    q(
        "SELECT p.pname FROM sq_proj p WHERE NOT EXISTS (SELECT 1 FROM sq_dept d WHERE d.id = p.dept_id)",
        id="not_exists_nullable_key",
    ),
    q(
        "SELECT e.name FROM sq_emp e WHERE EXISTS (SELECT 1 FROM sq_assign a JOIN sq_proj p ON a.pid = p.pid "
        "WHERE a.emp_id = e.id AND p.pbudget > 300) AND NOT EXISTS (SELECT 1 FROM sq_assign a2 "
        "WHERE a2.emp_id = e.id AND a2.hours < 8)",
        id="exists_and_not_exists",
    ),
    q(
        "SELECT e.name FROM sq_emp e WHERE EXISTS (SELECT 1 FROM sq_emp o WHERE o.dept_id = e.dept_id "
        "AND o.id <> e.id)",
        id="exists_correlated_by_inequality",
    ),
    q(
        "SELECT e.name, e.dept_id FROM sq_emp e WHERE NOT EXISTS (SELECT 1 FROM sq_emp o WHERE o.dept_id = e.dept_id "
        "AND o.salary > e.salary)",
        id="not_exists_correlated_by_comparison",
    ),
    q(
        "SELECT e.name FROM sq_emp e WHERE EXISTS (SELECT 1 FROM sq_assign a WHERE a.hours > e.salary / 1000)",
        id="exists_correlated_by_comparison_only",
    ),
    q(
        "SELECT e.name FROM sq_emp e WHERE e.id IN (SELECT a.emp_id FROM sq_assign a WHERE a.hours * 100 < e.salary "
        "OR a.pid = e.dept_id)",
        id="in_correlated_by_disjunction",
    ),
    q(
        "SELECT e.name FROM sq_emp e WHERE e.dept_id NOT IN (SELECT p.dept_id FROM sq_proj p "
        "WHERE p.pbudget > e.salary / 20)",
        id="not_in_correlated_by_comparison",
    ),
    q("SELECT name FROM sq_emp WHERE salary > (SELECT avg(salary) FROM sq_emp)", id="scalar_subquery"),
    q(
        "SELECT e.name FROM sq_emp e WHERE e.salary >= (SELECT avg(e2.salary) FROM sq_emp e2 "
        "WHERE e2.dept_id = e.dept_id)",
        id="correlated_scalar_subquery",
    ),
]

AGGREGATES = [
    q(
        "SELECT dept_id, count(*) AS n, count(manager_id) AS nm, count(DISTINCT salary) AS ds, sum(salary) AS s, "
        "avg(salary) AS a, min(salary) AS lo, max(salary) AS hi FROM sq_emp GROUP BY dept_id",
        names=True,
        id="group_by_all_aggregates",
    ),
    q(
        "SELECT dept_id, salary >= 5000 AS high, count(*) AS n FROM sq_emp GROUP BY dept_id, salary >= 5000",
        id="group_by_two_keys",
    ),
    q("SELECT year(hired) AS y, count(*) AS n FROM sq_emp GROUP BY year(hired)", id="group_by_expression"),
    q(
        "SELECT dept_id, min(name) AS first, max(hired) AS last, min(city) AS c FROM sq_emp GROUP BY dept_id",
        id="min_max_strings_dates",
    ),
    q("SELECT dept_id, count(*) AS c FROM sq_emp GROUP BY dept_id HAVING count(*) >= 3", id="having_count"),
    q(
        "SELECT dept_id FROM sq_emp GROUP BY dept_id HAVING sum(salary) > 12000 AND min(salary) < 5000",
        id="having_unselected_aggregates",
    ),
    q(
        "SELECT dept_id, avg(salary) AS a FROM sq_emp WHERE hired < DATE '1999-01-01' GROUP BY dept_id "
        "HAVING avg(salary) > 5000",
        id="where_group_having",
    ),
    q(
        "SELECT count(*), sum(salary), avg(salary), min(hired), max(name), count(DISTINCT dept_id) FROM sq_emp",
        id="global_aggregates",
    ),
    q(
        "SELECT count(*), sum(salary), avg(salary), min(salary), max(salary), count(DISTINCT dept_id) "
        "FROM sq_emp WHERE salary < 0",
        id="global_aggregates_empty_input",
    ),
    q(
        "SELECT dept_id, count(*) FROM sq_emp WHERE salary < 0 GROUP BY dept_id",
        allow_empty=True,
        id="grouped_aggregates_empty_input",
    ),
    q(
        "SELECT count(dept_id), sum(dept_id), avg(dept_id), min(manager_id), count(*) FROM sq_emp",
        id="aggregates_skip_nulls",
    ),
    q(
        "SELECT dept_id, sum(manager_id) AS s, count(manager_id) AS c FROM sq_emp WHERE dept_id IS NULL OR "
        "manager_id IS NULL GROUP BY dept_id",
        id="aggregate_all_null_group",
    ),
    q(
        "SELECT dept_id, sum(CASE WHEN salary > 5000 THEN 1 ELSE 0 END) AS high FROM sq_emp GROUP BY dept_id",
        id="sum_of_case",
    ),
    q(
        "SELECT e.dept_id, count(DISTINCT a.pid) AS projects, sum(a.hours) AS h FROM sq_emp e "
        "JOIN sq_assign a ON a.emp_id = e.id GROUP BY e.dept_id",
        id="count_distinct_after_join",
    ),
    q("SELECT DISTINCT dept_id FROM sq_emp", id="distinct_with_null"),
    q("SELECT DISTINCT dept_id, salary >= 5000 FROM sq_emp", id="distinct_two_columns"),
    q("SELECT count(*) FROM (SELECT DISTINCT salary FROM sq_emp) t", id="count_of_distinct_subquery"),
    q("SELECT DISTINCT e.dept_id, a.pid FROM sq_emp e JOIN sq_assign a ON a.emp_id = e.id", id="distinct_join"),
]

# GROUP BY whose select list calls no aggregate: one row per group all the same
GROUPS_ONLY = [
    q("SELECT dept_id FROM sq_emp GROUP BY dept_id", id="keys_only"),
    q("SELECT 1 AS one FROM sq_emp GROUP BY dept_id", id="key_not_selected"),
    q("SELECT salary FROM sq_emp GROUP BY salary, dept_id", id="one_key_of_two_selected"),
    q("SELECT DISTINCT salary FROM sq_emp GROUP BY salary, dept_id", id="distinct_and_group_by"),
    q("SELECT dept_id % 2 AS parity FROM sq_emp GROUP BY dept_id % 2", id="expression_key"),
    q("SELECT dept_id + 1 AS next FROM sq_emp GROUP BY dept_id", id="expression_over_key"),
    q("SELECT d.dname FROM sq_emp e LEFT JOIN sq_dept d ON e.dept_id = d.id GROUP BY d.dname", id="outer_joined_key"),
    q("SELECT dept_id FROM sq_emp GROUP BY dept_id HAVING dept_id > 1", id="having_without_aggregate"),
    q(
        "SELECT dept_id FROM sq_emp GROUP BY dept_id UNION ALL SELECT dept_id FROM sq_proj GROUP BY dept_id",
        id="union_all_of_groupings",
    ),
    q(
        "SELECT dept_id FROM sq_emp GROUP BY dept_id ORDER BY dept_id NULLS LAST LIMIT 3",
        ordered=True,
        id="ordered_and_limited",
    ),
    q("WITH g AS (SELECT manager_id FROM sq_emp GROUP BY manager_id) SELECT count(*) FROM g", id="in_a_cte"),
    q(
        "SELECT count(*) FROM (SELECT dept_id, manager_id FROM sq_emp GROUP BY dept_id, manager_id) t",
        id="in_a_derived_table",
    ),
    q(
        "SELECT name, (SELECT count(*) FROM (SELECT pid FROM sq_assign GROUP BY pid) p) FROM sq_emp",
        id="in_a_scalar_subquery",
    ),
    q(
        "SELECT e.name, (SELECT a.emp_id FROM sq_assign a WHERE a.emp_id = e.id GROUP BY a.emp_id) FROM sq_emp e",
        id="in_a_correlated_scalar_subquery",
    ),
    q("SELECT 1 AS one FROM sq_emp HAVING 1 = 1", id="having_alone"),
    q("SELECT 1 AS one FROM sq_emp WHERE salary < 0 HAVING 1 = 1", id="having_alone_over_no_row"),
]

SET_OPERATIONS = [
    q("SELECT dept_id FROM sq_emp UNION SELECT id FROM sq_dept", id="union"),
    q("SELECT dept_id FROM sq_emp WHERE salary > 5000 UNION ALL SELECT dept_id FROM sq_proj", id="union_all"),
    q("SELECT id FROM sq_dept EXCEPT SELECT dept_id FROM sq_emp", id="except"),
    q("SELECT dept_id FROM sq_emp EXCEPT SELECT dept_id FROM sq_proj", id="except_with_nulls"),
    q("SELECT dept_id FROM sq_emp INTERSECT SELECT dept_id FROM sq_proj", id="intersect_with_nulls"),
    q(
        "SELECT emp_id, pid FROM sq_assign INTERSECT SELECT e.id, p.pid FROM sq_emp e JOIN sq_proj p "
        "ON e.dept_id = p.dept_id",
        id="intersect_two_columns",
    ),
    q(
        "SELECT id FROM sq_dept UNION SELECT pid FROM sq_proj EXCEPT SELECT emp_id FROM sq_assign",
        id="union_then_except",
    ),
    q(
        "SELECT name, salary FROM sq_emp WHERE dept_id = 1 UNION ALL SELECT name, salary FROM sq_emp "
        "WHERE salary > 6000 UNION ALL SELECT pname, pbudget FROM sq_proj",
        id="union_all_three",
    ),
]

ORDERING = [
    q("SELECT id, name, salary FROM sq_emp ORDER BY salary DESC, id LIMIT 5", ordered=True, id="order_desc_limit"),
    q("SELECT DISTINCT (name) FROM sq_emp ORDER BY name", ordered=True, names=True, id="distinct_in_parentheses"),
    q("SELECT (id), (name) FROM sq_emp ORDER BY (id)", ordered=True, names=True, id="order_by_key_in_parentheses"),
    q(
        "SELECT name AS n, salary * 2 AS s2 FROM sq_emp ORDER BY s2, n DESC",
        ordered=True,
        names=True,
        id="order_by_alias",
    ),
    q(
        "SELECT dept_id, count(*) AS c FROM sq_emp GROUP BY dept_id ORDER BY 2 DESC, 1 NULLS LAST",
        ordered=True,
        id="order_by_position",
    ),
    q("SELECT id, dept_id FROM sq_emp ORDER BY dept_id, id", ordered=True, id="order_nulls_default_asc"),
    q("SELECT id, dept_id FROM sq_emp ORDER BY dept_id DESC, id DESC", ordered=True, id="order_nulls_default_desc"),
    q(
        "SELECT id, dept_id FROM sq_emp ORDER BY dept_id DESC NULLS FIRST, id DESC",
        ordered=True,
        id="order_nulls_explicit",
    ),
    q("SELECT name FROM sq_emp ORDER BY hired, id", ordered=True, id="order_by_unselected_column"),
    q(
        "SELECT e.name, d.dname FROM sq_emp e JOIN sq_dept d ON e.dept_id = d.id ORDER BY d.dname, e.salary DESC, "
        "e.name LIMIT 7",
        ordered=True,
        id="order_join_limit",
    ),
    q(
        "SELECT dept_id, sum(salary) AS total FROM sq_emp GROUP BY dept_id HAVING count(*) > 1 "
        "ORDER BY total DESC LIMIT 3",
        ordered=True,
        id="order_aggregate_limit",
    ),
    q(
        "SELECT upper(name) AS u FROM sq_emp WHERE salary >= 5000 ORDER BY length(name), u",
        ordered=True,
        id="order_by_expression",
    ),
]

CTES = [
    q(
        "WITH rich AS (SELECT * FROM sq_emp WHERE salary >= 6000) SELECT r.name, d.dname FROM rich r "
        "JOIN sq_dept d ON r.dept_id = d.id",
        id="cte",
    ),
    q(
        "WITH a AS (SELECT dept_id, sum(salary) AS total FROM sq_emp GROUP BY dept_id), "
        "b AS (SELECT * FROM a WHERE total > 9000) SELECT d.dname, b.total FROM b JOIN sq_dept d ON d.id = b.dept_id",
        id="cte_chain",
    ),
    q(
        "WITH x AS (SELECT id, manager_id FROM sq_emp) SELECT x1.id, x2.manager_id FROM x x1 "
        "JOIN x x2 ON x1.manager_id = x2.id",
        id="cte_used_twice",
    ),
    q(
        "WITH busy(emp, total) AS (SELECT emp_id, sum(hours) FROM sq_assign GROUP BY emp_id) "
        "SELECT e.name, busy.total FROM sq_emp e JOIN busy ON busy.emp = e.id WHERE busy.total > 10",
        names=True,
        id="cte_column_list",
    ),
    q(
        "WITH low AS (SELECT id, salary FROM sq_emp WHERE salary < 5000) SELECT id FROM low UNION ALL "
        "SELECT emp_id FROM sq_assign WHERE hours > 20 UNION SELECT id FROM low",
        id="cte_then_set_operation",
    ),
]

EXPRESSIONS = [
    q(
        "SELECT id, CASE WHEN salary >= 7000 THEN 'high' WHEN salary >= 5000 THEN 'mid' ELSE 'low' END AS band "
        "FROM sq_emp",
        id="case_searched",
    ),
    q("SELECT id, CASE dept_id WHEN 1 THEN 'one' WHEN 2 THEN 'two' END AS d FROM sq_emp", id="case_simple_null"),
    q(
        "SELECT CASE WHEN dept_id IS NULL THEN 'none' ELSE dname END AS k, count(*) FROM sq_emp e "
        "LEFT JOIN sq_dept d ON e.dept_id = d.id GROUP BY CASE WHEN dept_id IS NULL THEN 'none' ELSE dname END",
        id="group_by_case",
    ),
    q(
        "SELECT id, CAST(salary AS DOUBLE) / 3 AS a, CAST(id AS STRING) AS s, CAST('42' AS INT) + id AS n, "
        "CAST(salary / 3 AS INT) AS t, CAST(hired AS STRING) AS h FROM sq_emp",
        "SELECT id, CAST(salary AS DOUBLE) / 3 AS a, CAST(id AS VARCHAR) AS s, CAST('42' AS INT) + id AS n, "
        "CAST(trunc(salary / 3) AS INT) AS t, CAST(hired AS VARCHAR) AS h FROM sq_emp",
        id="cast",
    ),
    q(
        "SELECT id FROM sq_emp WHERE hired < CAST('1995-01-01' AS DATE) AND CAST(salary AS STRING) LIKE '%000'",
        id="cast_in_where",
    ),
    q(
        "SELECT id, upper(name) AS u, lower(name) AS l, substring(name, 2, 3) AS sub, length(name) AS len, "
        "trim(city) AS t, length(city) AS lc FROM sq_emp",
        names=True,
        id="string_functions",
    ),
    q(
        "SELECT e.id, concat(e.name, '-', d.dname) AS c, e.name || '!' AS bang FROM sq_emp e "
        "JOIN sq_dept d ON e.dept_id = d.id",
        id="concat",
    ),
    q(
        "SELECT id, concat(name, ':', city) AS c FROM sq_emp",
        "SELECT id, name || ':' || city AS c FROM sq_emp",
        id="concat_with_null",
    ),
    q(
        "SELECT substring(name, 1, 1) AS initial, count(*) AS n FROM sq_emp GROUP BY substring(name, 1, 1)",
        id="group_by_substring",
    ),
    q(
        "SELECT id FROM sq_emp WHERE upper(trim(city)) = 'PARIS' OR lower(name) LIKE '%o%'",
        id="string_functions_in_where",
    ),
    q("SELECT id, coalesce(dept_id, -1) AS d, coalesce(city, 'nowhere') AS c FROM sq_emp", id="coalesce"),
    q("SELECT id, dept_id + 1 AS d1, dept_id = 1 AS is_one, manager_id * 2 AS m2 FROM sq_emp", id="null_propagation"),
    q(
        "SELECT a.id, b.id FROM sq_emp a JOIN sq_emp b ON a.dept_id <=> b.dept_id WHERE a.id < b.id",
        "SELECT a.id, b.id FROM sq_emp a JOIN sq_emp b ON a.dept_id IS NOT DISTINCT FROM b.dept_id WHERE a.id < b.id",
        id="null_safe_equal_join",
    ),
]

DATES = [
    q(
        "SELECT id, hired, year(hired) AS y, month(hired) AS m FROM sq_emp WHERE hired >= DATE '1995-01-01'",
        id="date_literal_compare",
    ),
    q("SELECT id FROM sq_emp WHERE hired BETWEEN DATE '1992-01-01' AND DATE '1997-12-31'", id="date_between"),
    q("SELECT id FROM sq_emp WHERE hired < DATE '1995-01-01' AND year(hired) <> 1990", id="date_less_than"),
    q(
        "SELECT id, date_add(hired, 30) AS plus30, hired + INTERVAL 10 DAYS AS plus10, "
        "datediff(hired, DATE '1990-01-01') AS days FROM sq_emp",
        "SELECT id, hired + 30 AS plus30, hired + 10 AS plus10, hired - DATE '1990-01-01' AS days FROM sq_emp",
        id="date_add_interval_days",
    ),
    q(
        "SELECT id FROM sq_emp WHERE hired >= DATE '1995-01-01' AND hired < DATE '1995-01-01' + INTERVAL '3' YEAR",
        id="interval_year_tpch_style",
    ),
    q("SELECT id FROM sq_emp WHERE hired + INTERVAL '6' MONTH < DATE '1996-01-01'", id="interval_month"),
    q(
        "SELECT year(hired) AS y, min(hired) AS first FROM sq_emp WHERE hired > DATE '1993-01-01' GROUP BY year(hired)",
        id="date_group_min",
    ),
]

RANGE = [
    q(
        "SELECT id, id * id AS sq FROM range(10)",
        "SELECT range AS id, range * range AS sq FROM range(10)",
        names=True,
        id="range",
    ),
    q(
        "SELECT id FROM range(2, 20) WHERE id % 3 = 0",
        "SELECT range AS id FROM range(2, 20) WHERE range % 3 = 0",
        id="range_start_end",
    ),
    q(
        "SELECT r.id, e.name FROM range(5) r JOIN sq_emp e ON e.id = r.id",
        "SELECT r.range AS id, e.name FROM range(5) r JOIN sq_emp e ON e.id = r.range",
        id="range_join",
    ),
    q(
        "SELECT count(*), sum(id), max(id) FROM range(100)",
        "SELECT count(*), sum(range), max(range) FROM range(100)",
        id="range_aggregate",
    ),
]

PARAMS = [
    q("SELECT id FROM sq_emp WHERE salary > ? AND dept_id = ?", params=(5000, 1), id="param_ints"),
    q("SELECT name FROM sq_emp WHERE name LIKE ? OR id = ?", params=("%e%", 2), id="param_like"),
    q("SELECT id FROM sq_emp WHERE name = ?", params=("O'Neil",), id="param_quote_in_string"),
    q("SELECT id FROM sq_emp WHERE hired >= ?", params=(D(1995, 1, 1),), id="param_date"),
    q("SELECT id, salary + ? AS s FROM sq_emp WHERE dept_id = ?", params=(10, 3), id="param_in_select"),
    q("SELECT id FROM sq_emp WHERE id IN (?, ?, ?)", params=(2, 5, 11), id="param_in_list"),
    q(
        "SELECT dept_id, count(*) FROM sq_emp WHERE salary >= ? GROUP BY dept_id HAVING count(*) >= ?",
        params=(4000, 2),
        id="param_where_having",
    ),
    q(
        "SELECT e.name FROM sq_emp e WHERE e.id IN (SELECT emp_id FROM sq_assign WHERE hours > ?)",
        params=(15,),
        id="param_in_subquery",
    ),
    q(
        "SELECT name FROM sq_emp WHERE salary > ? ORDER BY salary DESC, name LIMIT 3",
        params=(1000,),
        ordered=True,
        id="param_order_limit",
    ),
]

ALL_CASES = (
    PROJECTION
    + WHERE
    + JOINS
    + SUBQUERIES
    + AGGREGATES
    + SET_OPERATIONS
    + ORDERING
    + CTES
    + EXPRESSIONS
    + DATES
    + RANGE
    + PARAMS
)


@pytest.mark.spark
@pytest.mark.parametrize("case", ALL_CASES)
def test_query_matches_duckdb(case, sq_tables, cur, duck):
    check(cur, duck, **case)


@under("local")
@pytest.mark.parametrize("case", SUBQUERIES)
def test_subqueries_in_this_process_match_duckdb(case, sq_tables, cur, duck):
    """Semi-, anti- and outer joins of decorrelated subqueries as DuckDB SQL over Arrow."""
    check(cur, duck, **case)


@under("local", "distributed")
@pytest.mark.parametrize("case", GROUPS_ONLY)
def test_grouping_without_aggregates_matches_duckdb(case, sq_tables, cur, duck):
    check(cur, duck, **case)


@pytest.mark.spark
@under("local")
def test_semi_join_runs_without_spark(sq_tables, conn):
    sql = (
        "SELECT e.name FROM sq_emp e WHERE EXISTS (SELECT 1 FROM sq_emp o WHERE o.dept_id = e.dept_id AND o.id <> e.id)"
    )
    assert spark_jobs(conn, sql, "local-semi-join") == 0


# ---------------------------------------------------------------------------------------------------------------
# Cases that need more than one statement
# ---------------------------------------------------------------------------------------------------------------


def test_limit_without_order_is_a_subset(sq_tables, cur, duck):
    cur.execute("SELECT id, name FROM sq_emp WHERE salary > 3000 LIMIT 4")
    got = normalize(cur.fetchall())
    full = Counter(normalize(duck.execute("SELECT id, name FROM sq_emp WHERE salary > 3000").fetchall()))
    assert len(got) == 4
    assert not Counter(got) - full, got


def test_aggregates_on_empty_registered_table(sq_tables, cur, duck):
    empty = pd.DataFrame({"k": pd.Series([], dtype="int64"), "v": pd.Series([], dtype="int64")})
    register_both(sq_tables, duck, "sq_empty", empty)
    check(cur, duck, "SELECT count(*), sum(v), min(v), max(k), avg(v) FROM sq_empty")
    check(cur, duck, "SELECT k, count(*) FROM sq_empty GROUP BY k", allow_empty=True)
    check(cur, duck, "SELECT e.id FROM sq_emp e JOIN sq_empty x ON x.k = e.id", allow_empty=True)
    check(cur, duck, "SELECT id FROM sq_emp WHERE id NOT IN (SELECT k FROM sq_empty)")


def test_register_overwrites_table(conn, cur, duck):
    for table in (pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]}), pd.DataFrame({"a": [10, 20], "b": ["p", "q"]})):
        register_both(conn, duck, "sq_over", table)
        check(cur, duck, "SELECT a, b FROM sq_over")


def test_register_arrow_table(sq_tables, cur, duck):
    import pyarrow as pa

    table = pa.table({"k": pa.array([1, 2, 2, None], pa.int64()), "s": pa.array(["a", None, "c", "d"])})
    register_both(sq_tables, duck, "sq_arrow", table)
    check(cur, duck, "SELECT k, count(*) AS n, max(s) AS m FROM sq_arrow GROUP BY k", names=True)
    check(cur, duck, "SELECT a.k, e.name FROM sq_arrow a JOIN sq_emp e ON e.id = a.k")


def test_same_cursor_several_queries(sq_tables, cur, duck):
    """One cursor, several executes: each fetchall sees only its own query's rows."""
    check(cur, duck, "SELECT id FROM sq_emp WHERE dept_id = 1")
    check(cur, duck, "SELECT dname, budget FROM sq_dept WHERE budget >= ?", params=(200,))
    check(cur, duck, "SELECT count(*) FROM sq_assign")
