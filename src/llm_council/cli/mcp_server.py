"""``llm-council mcp``: the council, its audit and judge calibration as MCP tools over stdio.

Built on the official MCP Python SDK (``pip install -e '.[mcp]'`` in the checkout); the tools are
:mod:`llm_council.integrations.mcp_tools`. stdout carries the protocol, so everything
else (logs) goes to stderr.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer

from llm_council.errors import ConfigError, CouncilError
from llm_council.infra.install_hints import extra_install_hint

_Tool = TypeVar("_Tool", bound=Callable[..., Any])

SERVER_NAME = "llm-council"
INSTRUCTIONS = (
    "An LLM council: several models answer, review each other's anonymized answers, and a "
    "chairman synthesizes; a bias audit reports, with known false-positive rates, when "
    "judges grade on different curves. consult_council runs a session; bias_report pools a "
    "record store; calibrate_judge replays a judge's recorded verdicts; audit_session "
    "audits stage 1 / stage 2 JSON from any council."
)


def _user_errors(tool: _Tool, tool_error: type[Exception]) -> _Tool:
    """Our one-line errors (a bad path, a bad shape) reach the client as the tool's error;
    anything else stays a crash the SDK logs with its traceback and hides from the client."""
    if inspect.iscoroutinefunction(tool):

        @functools.wraps(tool)
        async def checked_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await tool(*args, **kwargs)
            except CouncilError as error:
                raise tool_error(str(error)) from None

        return checked_async  # type: ignore[return-value]

    @functools.wraps(tool)
    def checked(*args: Any, **kwargs: Any) -> Any:
        try:
            return tool(*args, **kwargs)
        except CouncilError as error:
            raise tool_error(str(error)) from None

    return checked  # type: ignore[return-value]


def build_server() -> Any:
    """The MCP server with its four tools (imports the SDK; a clear error without it)."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise ConfigError(
            "llm-council mcp needs the MCP SDK 2.x: " + extra_install_hint("mcp")
        ) from None
    from llm_council.integrations import mcp_tools

    server: Any = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)

    def tool(function: _Tool) -> _Tool:
        server.tool()(_user_errors(function, ToolError))
        return function

    @tool
    async def consult_council(
        question: str,
        config_path: str | None = None,
        seed: int | None = None,
        bias_audit: bool = True,
    ) -> dict[str, Any]:
        """Ask the council: its synthesis, aggregate ranking, bias-audit summary and the
        store its records went to. config_path: a council TOML (default: the configured
        council, else the offline simulated one)."""
        return await mcp_tools.consult_council(question, config_path, seed, bias_audit)

    @tool
    def bias_report(
        store: str | None = None, since: str | None = None, until: str | None = None
    ) -> dict[str, Any]:
        """A record store's pooled bias findings (reviewer profiles, position, self-preference,
        leaderboard) as structured data. since/until: 7d, 24h or an ISO date."""
        return mcp_tools.bias_report(store, since, until)

    @tool
    def calibrate_judge(
        pairs_path: str, judge: str | None = None, fail_under: str | None = None
    ) -> dict[str, Any]:
        """Position-swap calibration replayed from a pairs JSONL file with recorded
        'judgments': per-judge agreement, kappa, position consistency, and the gate
        (fail_under like 'kappa=0.6,agreement=0.85')."""
        return mcp_tools.calibrate_judge(pairs_path, judge, fail_under)

    @tool
    async def audit_session(
        stage1: list[Any],
        stage2: list[Any],
        label_to_model: dict[str, Any],
        score_scale: list[float] | None = None,
        store: str | None = None,
        write_records: bool = False,
    ) -> dict[str, Any]:
        """Audit one session of any council: stage1 [{model, response}], stage2 [{model,
        ranking, parsed_ranking}], label_to_model (shared or per reviewer). Records are
        written to store (default: the configured one) only with write_records=true."""
        return await mcp_tools.audit_session(
            stage1,
            stage2,
            label_to_model,
            score_scale=score_scale,
            store=store,
            write_records=write_records,
        )

    return server


def mcp_command(
    transport: Annotated[str, typer.Option(help="Only 'stdio' (an MCP client starts this).")] = (
        "stdio"
    ),
) -> None:
    """Serve the council, its bias audit and judge calibration as MCP tools (stdio)."""
    from llm_council.infra.log_setup import configure_logging

    if transport != "stdio":
        raise ConfigError(f"unknown transport {transport!r}: only 'stdio' is served")
    configure_logging(level="WARNING")  # stderr: stdout is the protocol
    build_server().run("stdio")


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_command)
