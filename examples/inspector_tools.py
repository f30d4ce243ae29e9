"""Tools to try the web inspector with.

    kosong serve examples/inspector_tools.py:toolset
    # then open http://127.0.0.1:8000/ in a browser

- `crawl_site`: a slow tool that reports progress (cut the connection while it runs: the page
  resumes the same run).
- `plan_trip`: a rich schema: a nested object with bounds, an enum, an array, a boolean, a
  hyphenated name, defaults; the server checks what the schema cannot say (the stops must be
  cities it knows), and the page shows its answer next to the field it names.
- `rainfall_chart`: a result with a text part, an image part (a PNG drawn here), a brief, a
  table display block and a block of a type the page does not know.
- `exchange_rate`: cacheable for a minute: the second identical call is a cache hit.
- `flaky_lookup`: fails with a network error every other attempt; the retry policy retries it.
- `legacy_forecast`: deprecated, with a sunset date and a replacement.
- `forget_trip`: destructive.
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import struct
import zlib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr

from kosong.message import ImageURLPart, TextPart
from kosong.standard import report_progress, with_policies
from kosong.standard.policies import (
    CachePolicy,
    DeprecationPolicy,
    MetricsPolicy,
    RetryPolicy,
    TimeoutPolicy,
)
from kosong.tooling import BriefDisplayBlock, CallableTool2, DisplayBlock, ToolOk, ToolReturnValue
from kosong.tooling.error import ToolNetworkError
from kosong.tooling.simple import SimpleToolset

CITIES: dict[str, tuple[float, float]] = {
    "Paris": (48.857, 2.352),
    "Lyon": (45.764, 4.836),
    "Berlin": (52.520, 13.405),
    "Vienna": (48.208, 16.373),
    "Milan": (45.464, 9.190),
    "Madrid": (40.417, -3.704),
    "Lisbon": (38.722, -9.139),
    "Prague": (50.076, 14.438),
}
"""The cities the trip planner knows, with their latitude and longitude."""


class TableDisplayBlock(DisplayBlock):
    """A table for the user interface: column headers and rows of cells."""

    type: str = "table"
    title: str | None = None
    headers: list[str]
    rows: list[list[str]]


# --- a slow tool that reports progress ---------------------------------------------------------


class CrawlParams(BaseModel):
    site: str = Field(default="docs.example.com", description="The site to crawl", max_length=100)
    pages: int = Field(default=8, ge=1, le=40, description="How many pages to fetch")
    delay: float = Field(default=0.4, ge=0, le=5, description="Seconds each page takes")


class CrawlSite(CallableTool2[CrawlParams]):
    name: str = "crawl_site"
    description: str = "Fetch the pages of a site one by one, reporting progress."
    params: type[CrawlParams] = CrawlParams
    version = "1.2.0"
    streaming = True
    read_only_hint = True
    open_world_hint = True

    async def __call__(self, params: CrawlParams) -> ToolReturnValue:
        for page in range(1, params.pages + 1):
            await asyncio.sleep(params.delay)
            report_progress(page * 100 / params.pages, f"fetched {params.site}/page/{page}")
        return ToolOk(
            output=json.dumps({"site": params.site, "pages": params.pages}),
            brief=f"Crawled {params.pages} pages of {params.site}",
        )


# --- a rich schema ------------------------------------------------------------------------------


class Place(BaseModel):
    name: str = Field(description="What to call the place", min_length=1, max_length=40)
    latitude: float = Field(ge=-90, le=90, description="Degrees north")
    longitude: float = Field(ge=-180, le=180, description="Degrees east")


def _known_city(name: str) -> str:
    if name not in CITIES:
        raise ValueError(f"{name!r} is not a city this planner knows")
    return name


class TripParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    start: Place = Field(description="Where the trip starts")
    stops: list[Annotated[str, AfterValidator(_known_city)]] = Field(
        min_length=1, max_length=5, description=f"Cities on the way, of: {', '.join(CITIES)}"
    )
    transport: Literal["train", "car", "bike", "plane"] = "train"
    travellers: int = Field(default=2, ge=1, le=12)
    budget_eur: float = Field(alias="budget-eur", gt=0, le=100_000, description="In euros")
    avoid_tolls: bool = False


_SPEED_KMH = {"train": 140, "car": 90, "bike": 18, "plane": 600}


def _distance_km(a: tuple[float, float], b: tuple[float, float]) -> float:
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = (
        math.sin((lat2 - lat1) / 2) ** 2
        + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    )
    return 2 * 6371 * math.asin(math.sqrt(h))


class PlanTrip(CallableTool2[TripParams]):
    name: str = "plan_trip"
    description: str = "Plan a trip through some cities: distances and travel times per leg."
    params: type[TripParams] = TripParams
    version = "2.0.0"
    read_only_hint = True
    idempotent_hint = True

    async def __call__(self, params: TripParams) -> ToolReturnValue:
        here = (params.start.latitude, params.start.longitude)
        names = [params.start.name]
        rows: list[list[str]] = []
        total = 0.0
        for stop in params.stops:
            there = CITIES[stop]
            km = _distance_km(here, there)
            total += km
            hours = km / _SPEED_KMH[params.transport]
            rows.append([f"{names[-1]} → {stop}", f"{km:.0f} km", f"{hours:.1f} h"])
            names.append(stop)
            here = there
        summary = {"route": names, "distance_km": round(total), "transport": params.transport}
        return ToolOk(
            output=json.dumps(summary),
            display=[
                BriefDisplayBlock(text=f"{len(rows)} legs, {total:.0f} km by {params.transport}"),
                TableDisplayBlock(title="Legs", headers=["leg", "distance", "time"], rows=rows),
            ],
        )


# --- an image, a table and a block the page does not know ---------------------------------------


def _png(width: int, height: int, pixels: list[bytes]) -> bytes:
    """A PNG of RGB rows (`pixels`: `height` rows of `3 * width` bytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + row for row in pixels)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9))


def bar_chart(values: list[float], *, width: int = 240, height: int = 120) -> bytes:
    """A bar chart of `values` as a PNG: blue bars on white."""
    top = max(values) or 1.0
    slot = width // len(values)
    heights = [round(v / top * (height - 10)) for v in values]
    rows: list[bytes] = []
    for y in range(height):
        row = bytearray()
        for x in range(width):
            bar = x // slot
            inside = bar < len(values) and 3 <= x % slot < slot - 3
            filled = inside and height - y <= heights[bar]
            row += b"\x2f\x6f\xd0" if filled else b"\xff\xff\xff"
        rows.append(bytes(row))
    return _png(width, height, rows)


class ChartParams(BaseModel):
    city: Literal["Paris", "Berlin", "Lisbon", "Vienna"] = Field(description="Whose rainfall")
    months: int = Field(default=6, ge=1, le=12, description="How many months, from January")


_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_RAINFALL_MM = {
    "Paris": [51, 41, 48, 52, 63, 50, 62, 52, 48, 62, 52, 58],
    "Berlin": [42, 33, 40, 37, 54, 69, 56, 58, 45, 37, 44, 55],
    "Lisbon": [99, 86, 58, 62, 49, 16, 4, 6, 32, 89, 128, 128],
    "Vienna": [37, 39, 46, 52, 62, 70, 68, 58, 54, 40, 50, 44],
}


class RainfallChart(CallableTool2[ChartParams]):
    name: str = "rainfall_chart"
    description: str = "Monthly rainfall of a city: a chart, a table and a summary."
    params: type[ChartParams] = ChartParams
    version = "1.0.0"
    read_only_hint = True

    async def __call__(self, params: ChartParams) -> ToolReturnValue:
        values = _RAINFALL_MM[params.city][: params.months]
        png = base64.b64encode(bar_chart([float(v) for v in values])).decode()
        months = _MONTHS[: params.months]
        return ToolOk(
            output=[
                TextPart(text=f"Rainfall in {params.city}, {months[0]}–{months[-1]} (mm)"),
                ImageURLPart(image_url=ImageURLPart.ImageURL(url=f"data:image/png;base64,{png}")),
            ],
            display=[
                BriefDisplayBlock(text=f"{params.city}: {sum(values)} mm in {len(values)} months"),
                TableDisplayBlock(
                    title=f"Rainfall in {params.city}",
                    headers=["month", "mm"],
                    rows=[[m, str(v)] for m, v in zip(months, values, strict=True)],
                ),
                DisplayBlock.model_validate(
                    {"type": "map_pin", "city": params.city, "at": list(CITIES[params.city])}
                ),
            ],
        )


# --- cacheable, flaky, deprecated, destructive --------------------------------------------------


class RateParams(BaseModel):
    base: Literal["EUR", "USD", "JPY", "CNY"] = "EUR"
    quote: Literal["EUR", "USD", "JPY", "CNY"] = "USD"


_PER_EUR = {"EUR": 1.0, "USD": 1.08, "JPY": 162.3, "CNY": 7.81}


class ExchangeRate(CallableTool2[RateParams]):
    name: str = "exchange_rate"
    description: str = "The exchange rate between two currencies (slow to look up, cached)."
    params: type[RateParams] = RateParams
    version = "3.1.0"
    cacheable = True
    cache_ttl = 60
    read_only_hint = True
    idempotent_hint = True
    output_schema = {
        "type": "object",
        "properties": {"pair": {"type": "string"}, "rate": {"type": "number"}},
        "required": ["pair", "rate"],
    }

    async def __call__(self, params: RateParams) -> ToolReturnValue:
        await asyncio.sleep(0.3)  # stands for the rate service's round trip
        rate = _PER_EUR[params.quote] / _PER_EUR[params.base]
        return ToolOk(output=json.dumps({"pair": f"{params.base}/{params.quote}", "rate": rate}))


class LookupParams(BaseModel):
    key: str = Field(default="answer", max_length=50)


class FlakyLookup(CallableTool2[LookupParams]):
    name: str = "flaky_lookup"
    description: str = "Look a key up in a store that drops every other request."
    params: type[LookupParams] = LookupParams
    read_only_hint = True
    _attempts: int = PrivateAttr(default=0)

    async def __call__(self, params: LookupParams) -> ToolReturnValue:
        self._attempts += 1
        if self._attempts % 2:
            return ToolNetworkError("the store dropped the request")
        return ToolOk(output=json.dumps({"key": params.key, "value": 42}))


class ForecastParams(BaseModel):
    city: str = Field(max_length=40)


class LegacyForecast(CallableTool2[ForecastParams]):
    name: str = "legacy_forecast"
    description: str = "Tomorrow's weather (the old service)."
    params: type[ForecastParams] = ForecastParams
    version = "0.9.0"
    deprecated = True
    sunset_date = "2099-12-31"
    replacement = "rainfall_chart"
    migration_guide = "https://docs.example.com/migrate/legacy-forecast"
    changelog = {"0.9.0": "Last release; use rainfall_chart"}

    async def __call__(self, params: ForecastParams) -> ToolReturnValue:
        return ToolOk(output=f"{params.city}: cloudy, 14 °C")


class ForgetParams(BaseModel):
    trip_id: str = Field(pattern=r"^trip-[0-9]{1,6}$", description="Like trip-42")


class ForgetTrip(CallableTool2[ForgetParams]):
    name: str = "forget_trip"
    description: str = "Delete a saved trip."
    params: type[ForgetParams] = ForgetParams
    destructive_hint = True
    idempotent_hint = True

    async def __call__(self, params: ForgetParams) -> ToolReturnValue:
        return ToolOk(output=f"forgot {params.trip_id}", brief="Trip deleted")


def make_toolset(*extra: Any) -> Any:
    """The example tools (and `extra` ones) behind the standard's policies."""
    tools = [
        CrawlSite(),
        PlanTrip(),
        RainfallChart(),
        ExchangeRate(),
        FlakyLookup(),
        LegacyForecast(),
        ForgetTrip(),
        *extra,
    ]
    return with_policies(
        SimpleToolset(tools),
        MetricsPolicy(),
        DeprecationPolicy(),
        CachePolicy(),
        RetryPolicy(base_delay=0.2),
        TimeoutPolicy(120),
    )


toolset = make_toolset()
"""What `kosong serve examples/inspector_tools.py:toolset` serves."""
