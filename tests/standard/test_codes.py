"""The error-code catalog (appendix A) and the code of every kind of result."""

from __future__ import annotations

import pytest

from kosong.standard import CATALOG, ErrorCode, coded_error, error_code, is_retryable, retry_after
from kosong.standard._codes import error_class_for, error_details
from kosong.tooling import ToolError, ToolOk
from kosong.tooling.error import (
    ToolDeprecatedError,
    ToolNetworkError,
    ToolNotFoundError,
    ToolParseError,
    ToolPermissionDeniedError,
    ToolQuotaExceededError,
    ToolRateLimitedError,
    ToolRepeatedCallError,
    ToolResourceNotFoundError,
    ToolRuntimeError,
    ToolTimeoutError,
    ToolUnauthorizedError,
    ToolValidateError,
)

# Appendix A of the standard, row by row: code, HTTP status, retryable.
APPENDIX_A = [
    ("INVALID_PARAMS", 400, False),
    ("TOOL_NOT_FOUND", 404, False),
    ("RESOURCE_NOT_FOUND", 404, False),
    ("PERMISSION_DENIED", 403, False),
    ("UNAUTHORIZED", 401, False),
    ("TIMEOUT", 504, True),
    ("RATE_LIMITED", 429, True),
    ("NETWORK_ERROR", 503, True),
    ("EXECUTION_ERROR", 500, False),
    ("TOOL_DEPRECATED", 410, False),
    ("QUOTA_EXCEEDED", 429, False),
]


@pytest.mark.parametrize(("code", "status", "retryable"), APPENDIX_A)
def test_catalog_matches_appendix_a(code: str, status: int, retryable: bool) -> None:
    spec = CATALOG[code]
    assert (spec.code, spec.http_status, spec.retryable, spec.in_standard) == (
        code,
        status,
        retryable,
        True,
    )


def test_catalog_has_appendix_a_and_only_the_documented_extension() -> None:
    extensions = {code for code, spec in CATALOG.items() if not spec.in_standard}
    assert set(CATALOG) - extensions == {row[0] for row in APPENDIX_A}
    assert extensions == {"REPEATED_CALL", "CANCELLED"}
    assert {c.value for c in ErrorCode} == set(CATALOG)


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (ToolValidateError("bad"), "INVALID_PARAMS"),
        (ToolParseError("bad json"), "INVALID_PARAMS"),
        (ToolNotFoundError("nope"), "TOOL_NOT_FOUND"),
        (ToolRuntimeError("boom"), "EXECUTION_ERROR"),
        (ToolError(message="plain"), "EXECUTION_ERROR"),
        (ToolTimeoutError("t", 5), "TIMEOUT"),
        (ToolRateLimitedError("slow down"), "RATE_LIMITED"),
        (ToolNetworkError("unreachable"), "NETWORK_ERROR"),
        (ToolPermissionDeniedError("t", "no"), "PERMISSION_DENIED"),
        (ToolUnauthorizedError("no key"), "UNAUTHORIZED"),
        (ToolResourceNotFoundError("no file"), "RESOURCE_NOT_FOUND"),
        (ToolQuotaExceededError("spent"), "QUOTA_EXCEEDED"),
        (ToolDeprecatedError("t"), "TOOL_DEPRECATED"),
        (ToolRepeatedCallError("t", 3), "REPEATED_CALL"),
        (coded_error("CITY_NOT_FOUND", "no such city"), "CITY_NOT_FOUND"),
    ],
)
def test_every_error_class_maps_to_its_code(value: ToolError, code: str) -> None:
    assert error_code(value) == code
    expected = CATALOG[code].retryable if code in CATALOG else False
    assert is_retryable(value) is expected


def test_success_has_no_code() -> None:
    assert error_code(ToolOk(output="x")) is None
    assert not is_retryable(ToolOk())


def test_each_catalog_code_names_a_class_that_reports_that_code() -> None:
    samples = {
        ToolValidateError: ToolValidateError("x"),
        ToolNotFoundError: ToolNotFoundError("x"),
        ToolRuntimeError: ToolRuntimeError("x"),
    }
    for code, spec in CATALOG.items():
        cls = error_class_for(code)
        assert cls is spec.error_class
        if cls in samples:
            assert error_code(samples[cls]) == code
    assert error_class_for("CITY_NOT_FOUND") is ToolError


def test_a_code_carried_by_the_result_wins_over_its_class() -> None:
    value = ToolRuntimeError("the upstream timed out")
    value.extras = {"standard": {"error": {"code": "NETWORK_ERROR"}}}
    assert error_code(value) == "NETWORK_ERROR"


def test_an_error_can_override_the_catalogs_retryable() -> None:
    assert is_retryable(coded_error("UPSTREAM_BUSY", "busy", retryable=True))
    assert not is_retryable(coded_error("TIMEOUT", "gave up", retryable=False))
    assert not is_retryable(coded_error("CITY_NOT_FOUND", "no"))


def test_rate_limit_errors_carry_retry_after() -> None:
    assert retry_after(ToolRateLimitedError("slow", retry_after=2.5)) == 2.5
    assert retry_after(ToolRateLimitedError("slow")) is None
    assert "retry after 2.5 seconds" in ToolRateLimitedError("slow", retry_after=2.5).message
    with pytest.raises(ValueError, match="negative"):
        ToolRateLimitedError("slow", retry_after=-1)


def test_deprecated_error_names_the_replacement_and_guide() -> None:
    value = ToolDeprecatedError(
        "get_weather_v1",
        replacement="get_weather",
        sunset_date="2026-12-31",
        migration_guide="https://docs.example.com/migration/weather-v1-to-v2",
    )
    assert "use `get_weather` instead" in value.message
    assert "https://docs.example.com/migration/weather-v1-to-v2" in value.message
    assert error_details(value) == {
        "replacement": "get_weather",
        "sunset_date": "2026-12-31",
        "migration_guide": "https://docs.example.com/migration/weather-v1-to-v2",
    }


def test_error_messages_say_what_happened() -> None:
    assert ToolTimeoutError("slow_tool", 2.5).message == (
        "Tool `slow_tool` did not finish within its time limit of 2.5 seconds and was stopped"
    )
    assert ToolPermissionDeniedError("rm", "the user said no").message == (
        "Permission denied for tool `rm`: the user said no"
    )
    assert "3 times" in ToolRepeatedCallError("search", 3).message


@pytest.mark.parametrize("code", ["", "city_not_found", "CITY NOT FOUND", "CITY-NOT-FOUND"])
def test_coded_error_refuses_codes_that_are_not_upper_snake_case(code: str) -> None:
    with pytest.raises(ValueError, match="UPPER_SNAKE_CASE"):
        coded_error(code, "x")


def test_coded_error_keeps_extra_details() -> None:
    value = coded_error("CITY_NOT_FOUND", "城市'XYZ'未收录", brief="Unknown city", city="XYZ")
    assert value.message == "城市'XYZ'未收录"
    assert value.brief == "Unknown city"
    assert error_details(value) == {"city": "XYZ"}
