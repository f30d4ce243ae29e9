"""`kosong worker TARGET --redis URL`: execute the calls front ends queue in Redis."""

from __future__ import annotations

import asyncio
import logging

import click

from kosong.cli._errors import CLIError
from kosong.cli._load import TARGET_HELP, open_target
from kosong.cli._serve import check_redis
from kosong.server import ServerConfig, work

__all__ = ["worker"]


@click.command(epilog=TARGET_HELP, short_help="Run the calls that front ends queue in Redis.")
@click.argument("target", metavar="TARGET")
@click.option("--redis", "redis_url", metavar="URL", envvar="KOSONG_REDIS", required=True,
              help="The Redis the front ends (kosong serve --redis) queue calls in.")  # fmt: skip
@click.option("--concurrency", default=100, show_default=True, type=click.IntRange(1),
              help="Calls this worker runs at once.")  # fmt: skip
@click.option("--lease", default=5.0, show_default=True, type=click.FloatRange(0.1),
              help="Seconds after which the calls of a silent worker go to another.")  # fmt: skip
@click.option(
    "--grace",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0),
    help="Seconds calls in flight get when stopping; the rest go to another worker.",
)
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["critical", "error", "warning", "info", "debug"]))  # fmt: skip
def worker(
    target: str, redis_url: str, concurrency: int, lease: float, grace: float, log_level: str
) -> int:
    """Run the calls that front ends serving TARGET queue in Redis (any number of each).

    Serve the same TARGET with `kosong serve --redis URL` (`--workers 0` for a front end
    that runs none itself). A worker that dies has its calls taken over by another within
    --lease seconds: a tool that is safe to repeat runs again, any other ends with an error
    saying it may or may not have taken effect.
    """
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s: %(message)s")
    if log_level != "debug":  # Docket logs every task it runs at info: only its warnings here
        logging.getLogger("docket").setLevel(max(logging.WARNING, logging.root.level))
    asyncio.run(check_redis(redis_url))
    config = ServerConfig(
        redis_url=redis_url, workers=concurrency, lease=lease, grace=grace, rate_limit=None,
        inspector=False,
    )  # fmt: skip

    async def run() -> None:
        async with open_target(target) as toolset:  # opened in the loop that runs the calls

            def ready(server: object) -> None:
                count = len(toolset.tools)
                click.echo(f"kosong: worker running up to {concurrency} call(s) of {count} "
                           f"tool(s) queued in {redis_url} (Ctrl+C to stop)", err=True)  # fmt: skip

            await work(toolset, config, ready=ready)

    try:
        asyncio.run(run())
    except ConnectionError as e:
        raise CLIError(str(e)) from None
    return 0
