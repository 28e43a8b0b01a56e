"""The click-log schema and column mapping: re-exported from :mod:`ulr.data.schema` (fields,
types, identifiers, rules) and :mod:`ulr.data.mapping` (mapping, column plans, facts).

Kept so that ``schema.X`` keeps working; new code imports from :mod:`ulr.data`.
"""

from __future__ import annotations

from ulr.data.mapping import (  # noqa: F401
    COMPOSITE_FIELDS, CONSTANT_TYPES, FACTS, KEY_SEPARATOR, LogFacts, Mapping, derived_columns,
    plan_columns)
from ulr.data.schema import (  # noqa: F401
    _IDENT, CANONICAL, EXTRA_TYPE, FEATURE_PREFIX, FEATURE_TYPE, NOT_FINITE, OPTIONAL, PROBLEMS,
    RAGGED_ROW, READ_TYPES, REQUIRED, STORE_TYPES, SYNONYMS, WHOLE_ROW, ColumnPlan, auto_mapping,
    preview_columns, problem_of, quote_ident, refuse_duplicates, rule_conditions, safe_ident,
    sanitize, table_ident)
