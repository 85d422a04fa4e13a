"""
Schemathesis hooks for the OpenAPI fuzzing test.

OpenAPI cannot state that C{since} must not be later than C{until}; the
description says so and the service answers 400, which a fuzzer generating
"schema-valid" pairs would report. Those pairs are left out here and tested
in C{tests.test_search}.
"""

from typing import Any

import schemathesis


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    query = case.query or {}
    since, until = query.get("since"), query.get("until")
    return not (isinstance(since, str) and isinstance(until, str) and since > until)
