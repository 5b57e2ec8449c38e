"""The command line itself: ``--version``, plain help texts with every default, and arguments
refused in one line before anything connects."""

from __future__ import annotations

import asyncio
import re
import sys
from importlib.metadata import version
from pathlib import Path

from informer.cli import _DISTRIBUTION

from .conftest import REPO_ROOT, cli, cli_env

COMMANDS = ((), ("demo",), ("serve",), ("watch",))
RST = re.compile(r"``|:(?:mod|class|func|meth|attr|data|exc):`|\.\. \w+::")


async def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        *cli(*args),
        cwd=REPO_ROOT,
        env=env or cli_env(COLUMNS="100"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


_HELP: dict[tuple[str, ...], tuple[int, str, str]] = {}


async def help_of(*command: str) -> tuple[int, str, str]:
    """``informer COMMAND --help``, run once for the module (two tests read ``serve --help``)."""
    if command not in _HELP:
        _HELP[command] = await run(*command, "--help")
    return _HELP[command]


def options(help_text: str) -> dict[str, str]:
    """Each option of a help text (``--name``) and its help, joined into one line."""
    found: dict[str, str] = {}
    current = None
    section = help_text.split("\noptions:\n", 1)[1]
    for line in section.splitlines():
        match = re.match(r"^  (?:-\w(?: \S+)?, )?(--[\w-]+)(?:[ ,]\S+)*(?:\s{2,}(.*))?$", line)
        if match:
            current = match[1]
            found[current] = match[2] or ""
        elif current is not None and line.startswith("    "):
            found[current] += " " + line.strip()
    return found


async def test_version_is_the_installed_distributions() -> None:
    code, out, _ = await run("--version")
    assert code == 0
    assert out == f"{_DISTRIBUTION} {version(_DISTRIBUTION)}\n"


async def test_help_texts_are_plain_text() -> None:
    results = await asyncio.gather(*(help_of(*command) for command in COMMANDS))
    for command, (code, out, _) in zip(COMMANDS, results, strict=True):
        assert code == 0, command
        assert not RST.search(out), (command, RST.findall(out))


async def test_every_serve_option_shows_its_default() -> None:
    code, out, _ = await help_of("serve")
    assert code == 0
    found = options(out)
    assert {"--port", "--personality", "--compaction-window", "--faults"} <= found.keys()
    for option, text in found.items():
        if option != "--help":
            assert "default: " in text, (option, text)


BAD_ARGUMENTS = {
    ("watch", "cm", "--wait-for-rv", "abc"): (
        "informer watch: error: argument --wait-for-rv: 'abc' is not a resource version"
    ),
    ("watch", "cm", "--wait-for-rv", "0"): (
        "informer watch: error: argument --wait-for-rv: '0' is not a resource version"
    ),
    ("watch", "cm", "--timeout", "-1"): (
        "informer watch: error: argument --timeout: '-1' must be a finite number above 0"
    ),
    ("watch", "cm", "--metrics-port", "70000"): (
        "informer watch: error: argument --metrics-port: '70000' is not a port"
    ),
    ("demo", "--duration", "0"): (
        "informer demo: error: argument --duration: '0' must be a finite number above 0"
    ),
    ("serve", "--port", "x"): "informer serve: error: argument --port: 'x' is not a whole",
    ("watch",): "informer watch: error: the following arguments are required: RESOURCE",
}


async def test_bad_arguments_are_one_line_errors_before_connecting(tmp_path: Path) -> None:
    # a kubeconfig whose server nobody listens on: connecting would fail with another message
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    env = cli_env(KUBECONFIG=str(kubeconfig))
    results = await asyncio.gather(*(run(*args, env=env) for args in BAD_ARGUMENTS))
    for (args, error), (code, out, err) in zip(BAD_ARGUMENTS.items(), results, strict=True):
        assert code == 2, (args, err)
        assert out == "", args
        assert len(err.splitlines()) == 1 and err.startswith(error), (args, err)
        assert err.rstrip().endswith(f"(see informer {args[0]} --help)"), (args, err)


async def test_without_the_cli_extra_the_command_line_says_what_to_install() -> None:
    async def without(*modules: str) -> tuple[int, str, str]:
        blocked = "; ".join(f"sys.modules[{m!r}] = None" for m in modules)  # import fails
        code = f"import sys; {blocked}; from informer.cli import main; sys.exit(main())"
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            code,
            "demo",
            "--duration",
            "1",
            cwd=REPO_ROOT,
            env=cli_env(),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()

    no_rich, no_yaml, neither = await asyncio.gather(
        without("rich"), without("yaml"), without("rich", "yaml")
    )
    install = 'which the library alone does not install: pip install "kube-informer[cli]"\n'
    for (code, out, err), missing in (
        (no_rich, "rich"),
        (no_yaml, "PyYAML"),
        (neither, "rich and PyYAML"),
    ):
        assert code == 1 and out == "", err
        assert err == f"informer demo: error: the command line needs {missing}, {install}"
