"""dnfsmon init-config: the documented example config, written without overwriting or following a link."""

from __future__ import annotations

import json
import os

from .. import config as configuration
from ..errors import EnvironmentProblem

EXIT_OK = 0


def example_config(var_dir: str) -> bytes:
    """example.toml with the two directories set (uncommented) to var_dir/state and var_dir/store."""
    with open(configuration.EXAMPLE_PATH, encoding="utf-8") as f:
        text = f.read()
    for commented, key, leaf in (("# state_dir = ", "state_dir", "state"), ("# dir = ", "dir", "store")):
        start = text.index(commented)  # the first such line: [agent] state_dir, then [store] dir
        end = text.index("\n", start)
        text = text[:start] + f"{key} = {json.dumps(os.path.join(var_dir, leaf))}" + text[end:]
    return text.encode("utf-8")


def cmd_init_config(path: str, var_dir: str) -> int:
    """Write the example config; refuse to overwrite, never follow a symlink planted at `path`."""
    text = example_config(var_dir)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640)
    except FileExistsError:
        raise EnvironmentProblem(f"{path} exists; dnfsmon init-config never overwrites (move it away first)") from None
    except FileNotFoundError:
        directory = os.path.dirname(os.path.abspath(path))
        raise EnvironmentProblem(
            f"{directory} does not exist: create it first (install -d -m 755 {directory})"
        ) from None
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o640)  # whatever the umask
        f.write(text)
    print(f"wrote {path} (mode 0640): edit it, then run dnfsmon check")
    return EXIT_OK
