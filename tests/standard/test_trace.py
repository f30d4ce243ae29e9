"""Trace ids, event ids and timestamps."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from datetime import UTC, datetime

import pytest

from kosong.standard import current_trace_id, new_trace_id, trace_scope
from kosong.standard._trace import TRACE_ID_PATTERN, new_event_id


def test_new_trace_ids_have_the_standards_form_and_are_unique() -> None:
    ids = {new_trace_id() for _ in range(1000)}
    assert len(ids) == 1000
    today = datetime.now(UTC).strftime("%Y%m%d")
    for trace_id in ids:
        assert TRACE_ID_PATTERN.match(trace_id)
        assert trace_id[6:14] == today or trace_id[6:14] >= today  # across midnight


def test_event_ids_have_their_own_prefix() -> None:
    assert re.match(r"\Aevt_[0-9]{8}_[0-9a-f]{12}\Z", new_event_id())


def test_trace_scope_sets_and_restores_the_current_trace() -> None:
    assert current_trace_id() is None
    with trace_scope() as outer:
        assert current_trace_id() == outer and TRACE_ID_PATTERN.match(outer)
        with trace_scope("trace_given") as inner:
            assert inner == current_trace_id() == "trace_given"
        assert current_trace_id() == outer
    assert current_trace_id() is None
    with pytest.raises(ValueError), trace_scope(""):
        pass


FORKED_IDS = textwrap.dedent(
    """
    import os
    from kosong.standard import new_trace_id
    new_trace_id()  # random parts are now drawn in advance
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(writer, new_trace_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    print(new_trace_id(), os.read(reader, 100).decode())
    """
)


@pytest.mark.external  # a child interpreter
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_process_does_not_reuse_its_parents_ids() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORKED_IDS], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    parent, child = done.stdout.split()
    assert TRACE_ID_PATTERN.match(parent) and TRACE_ID_PATTERN.match(child)
    assert parent != child


def test_the_trace_id_pattern_matches_the_whole_id_only() -> None:
    trace_id = new_trace_id()
    assert TRACE_ID_PATTERN.match(trace_id)
    assert not TRACE_ID_PATTERN.match(trace_id + "\n")
