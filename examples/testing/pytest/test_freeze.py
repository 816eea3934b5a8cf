"""A VM's view of a Freeze, from Python: `forewarn emulator --json` as a process, urllib only."""
import json
import os
import shutil
import subprocess
import urllib.request

import pytest

API = "api-version=2020-07-01"


def forewarn_command():
    # The project's own install (npm install --save-dev forewarn), else npx; FOREWARN_BIN overrides.
    if os.environ.get("FOREWARN_BIN"):
        return [os.environ["FOREWARN_BIN"]]
    local = os.path.join(os.path.dirname(__file__), "node_modules", ".bin", "forewarn")
    return [local] if os.path.exists(local) else [shutil.which("npx") or "npx", "--yes", "forewarn"]


@pytest.fixture(scope="module")
def emulator():
    # Port 0: the OS picks free ports, which the one JSON line on stdout reports.
    proc = subprocess.Popen(
        forewarn_command() + ["emulator", "--json", "--clock", "manual",
                              "--imds", "127.0.0.1:0", "--control", "127.0.0.1:0"],
        stdout=subprocess.PIPE, text=True)
    ready = json.loads(proc.stdout.readline() or "{}")
    assert ready.get("event") == "ready", "the emulator exited before it was ready"
    yield ready
    proc.terminate()
    assert proc.wait(timeout=10) == 0


def call(method, url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=10) as answer:
        text = answer.read()
        return json.loads(text) if text else None


@pytest.fixture
def emu(emulator):
    call("POST", emulator["controlUrl"] + "/v1/reset")  # each test starts from the start state
    return emulator


def test_approved_freeze_starts(emu):
    imds = emu["imdsUrl"] + "/vms/vm0/metadata/scheduledevents?" + API  # the default fleet's one VM
    control = emu["controlUrl"]
    call("POST", control + "/v1/operations", {"type": "freeze", "vms": ["vm0"]})
    [freeze] = call("GET", imds, headers={"Metadata": "true"})["Events"]
    assert freeze["EventType"] == "Freeze" and freeze["EventStatus"] == "Scheduled"
    call("POST", imds, {"StartRequests": [{"EventId": freeze["EventId"]}]}, {"Metadata": "true"})
    call("POST", control + "/v1/clock/advance", {"seconds": 1})
    [started] = call("GET", imds, headers={"Metadata": "true"})["Events"]
    assert started["EventStatus"] == "Started"
