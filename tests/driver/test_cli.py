"""The vprof driver's command line: help, configuration errors, exit codes, `vprof run`."""
import os
import subprocess

import pytest


@pytest.fixture(scope="module")
def vprof(build_dir):
    exe = build_dir / "driver" / "vprof"
    assert exe.exists(), f"{exe} not built"
    return exe


def call(vprof, *args, cwd, env=None):
    return subprocess.run([str(vprof), *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env=env)


def test_help_lists_every_subcommand(vprof, tmp_path):
    r = call(vprof, "--help", cwd=tmp_path)
    assert r.returncode == 0
    for name in ("run", "config", "clean"):
        assert f"\n  {name} " in r.stdout
    assert "Exit codes" in r.stdout
    assert "5 the machine cannot do what the settings require" in r.stdout


def test_missing_subcommand_is_usage_error(vprof, tmp_path):
    assert call(vprof, cwd=tmp_path).returncode == 2


def test_flags_override_config_file(vprof, tmp_path):
    (tmp_path / "vprof.toml").write_text('depth = 4\nk = 2\nroots = ["main"]\n')
    r = call(vprof, "config", "--k", "5", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "\ndepth = 4\n" in r.stdout
    assert "\nk = 5\n" in r.stdout
    assert '\nroots = ["main"]\n' in r.stdout


def test_config_prints_valid_toml_with_every_key(vprof, tmp_path):
    """`vprof config` is a vprof.toml a user can copy: it parses, and every key has a value
    that reads back as the setting it shows (an empty `key = ` was once printed)."""
    import tomllib

    (tmp_path / "vprof.toml").write_text('ranking = "vprofiler"\ndepth = 3\n')
    r = call(vprof, "config", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    keys = [line.split(" = ", 1)[0] for line in r.stdout.splitlines()
            if line and not line.startswith("#") and " = " in line]
    assert keys, r.stdout
    parsed = tomllib.loads(r.stdout)
    assert sorted(parsed) == sorted(keys)
    assert parsed["ranking"] == "vprofiler" and parsed["depth"] == 3
    # read back: the printed file, used as a vprof.toml, gives the same settings
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "vprof.toml").write_text(r.stdout)
    again = call(vprof, "config", cwd=tmp_path / "copy")
    assert again.returncode == 0, again.stderr
    reread = tomllib.loads(again.stdout)
    paths = {"compile_commands"}  # resolved against the project root, which moved
    assert {k: v for k, v in reread.items() if k not in paths} == \
        {k: v for k, v in parsed.items() if k not in paths}


@pytest.mark.parametrize(
    "text, message",
    [
        ('depth = "deep"\n', "vprof.toml:1: key 'depth' must be an integer"),
        ("dpth = 2\n", "vprof.toml:1: unknown key 'dpth'"),
        ("k = 0\n", "vprof.toml:1: key 'k' must be between 1 and"),
        ("roots = [1]\n", "every entry of 'roots' must be a string"),
        ("depth = \n", "vprof.toml:1:"),
        ("prune = 1.5\n", "vprof.toml:1: key 'prune' must be a number in [0, 1)"),
        ('prune = "1%"\n', "vprof.toml:1: key 'prune' must be a number in [0, 1)"),
        ("tail_percentile = 100\n", "vprof.toml:1: key 'tail_percentile' must be a number in (0, 100)"),
        ('k = 2\nkernel_wakeups = "yes"\n',
         "vprof.toml:2: key 'kernel_wakeups' must be \"auto\", \"on\" or \"off\""),
        ("kernel_wakeups = true\n", "vprof.toml:1: key 'kernel_wakeups' must be"),
        ("sched_ring_mb = 0\n", "vprof.toml:1: key 'sched_ring_mb' must be between 1 and 4096"),
        ("sched_ring_mb = 5000\n", "vprof.toml:1: key 'sched_ring_mb' must be between 1 and"),
        ("stream_cap_mb = -1\n", "vprof.toml:1: key 'stream_cap_mb' must be between 0 and"),
        ('stream_cap_mb = "256M"\n', "vprof.toml:1: key 'stream_cap_mb' must be an integer"),
    ],
)
def test_bad_config_names_file_line_and_key(vprof, tmp_path, text, message):
    (tmp_path / "vprof.toml").write_text(text)
    r = call(vprof, "config", cwd=tmp_path)
    assert r.returncode == 2
    assert message in r.stderr


def test_config_prints_the_recording_keys_as_toml(vprof, tmp_path):
    import tomllib
    env = {k: v for k, v in os.environ.items() if k != "VPROF_MAX_THREAD_MB"}
    r = call(vprof, "config", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    keys = tomllib.loads(r.stdout)
    assert (keys["kernel_wakeups"], keys["sched_ring_mb"], keys["stream_cap_mb"]) == ("auto", 16, 256)
    (tmp_path / "vprof.toml").write_text('kernel_wakeups = "off"\nsched_ring_mb = 64\n'
                                         "stream_cap_mb = 0\n")
    keys = tomllib.loads(call(vprof, "config", "--kernel-wakeups", "on", cwd=tmp_path,
                              env=env).stdout)
    assert (keys["kernel_wakeups"], keys["sched_ring_mb"], keys["stream_cap_mb"]) == ("on", 64, 0)


def test_the_stream_cap_goes_to_the_workload_and_the_environment_wins_over_the_file(
        vprof, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "VPROF_MAX_THREAD_MB"}
    env["VPROF_SCHED"] = "/nonexistent"  # no recorder: this test is about the cap
    show = ["run", "--kernel-wakeups", "off", "--", "sh", "-c", 'echo "$VPROF_MAX_THREAD_MB"']
    assert call(vprof, *show, cwd=tmp_path, env=env).stdout == "256\n"
    (tmp_path / "vprof.toml").write_text("stream_cap_mb = 8\n")
    assert call(vprof, *show, cwd=tmp_path, env=env).stdout == "8\n"
    env["VPROF_MAX_THREAD_MB"] = "1024"
    assert call(vprof, *show, cwd=tmp_path, env=env).stdout == "1024\n"
    r = call(vprof, "config", cwd=tmp_path, env=env)
    assert "\nstream_cap_mb = 1024  # from VPROF_MAX_THREAD_MB in the environment\n" in r.stdout
    # a flag wins over both
    assert call(vprof, show[0], "--stream-cap-mb", "3", *show[1:], cwd=tmp_path,
                env=env).stdout == "3\n"
    env["VPROF_MAX_THREAD_MB"] = "lots"
    r = call(vprof, *show, cwd=tmp_path, env=env)
    assert r.returncode == 2
    assert 'VPROF_MAX_THREAD_MB="lots" in the environment: it must be a whole number' in r.stderr


def test_explicit_missing_config_file(vprof, tmp_path):
    r = call(vprof, "--config", "nope.toml", "config", cwd=tmp_path)
    assert r.returncode == 2
    assert "nope.toml: no such configuration file" in r.stderr


def test_run_passes_exit_code_and_sets_trace_dir(vprof, tmp_path):
    r = call(vprof, "run", "--", "sh", "-c", 'echo "$VPROF_TRACE_DIR"; exit 7', cwd=tmp_path)
    assert r.returncode == 7
    assert r.stdout.strip() == str(tmp_path / ".vprof" / "traces" / "manual")
    assert "exit code 7" in r.stderr


def test_run_missing_program(vprof, tmp_path):
    r = call(vprof, "run", "--", "./no-such-program", cwd=tmp_path)
    assert r.returncode == 1
    assert "no-such-program: cannot run: No such file or directory" in r.stderr


def test_clean_removes_traces_only(vprof, tmp_path):
    traces = tmp_path / ".vprof" / "traces" / "manual"
    traces.mkdir(parents=True)
    (tmp_path / ".vprof" / "vprof.db").write_text("")
    assert call(vprof, "clean", cwd=tmp_path).returncode == 0
    assert not traces.exists()
    assert (tmp_path / ".vprof" / "vprof.db").exists()
    assert call(vprof, "clean", "--all", cwd=tmp_path).returncode == 0
    assert not (tmp_path / ".vprof").exists()


def test_dump_reports_corrupt_trace_with_file_and_offset(vprof, tmp_path):
    bad = tmp_path / "1.0.vpt"
    bad.write_bytes(b"VPROFTRC" + b"\0" * 20)
    r = call(vprof, "dump", str(bad), cwd=tmp_path)
    assert r.returncode == 3
    assert f"{bad}: offset 28: truncated header" in r.stderr


def test_dump_without_any_trace(vprof, tmp_path):
    r = call(vprof, "dump", cwd=tmp_path)
    assert r.returncode == 3
    assert "no trace under" in r.stderr


def test_pipeline_commands_need_a_workspace(vprof, tmp_path):
    for cmd in (["loop"], ["expand"], ["report"]):
        r = call(vprof, *cmd, cwd=tmp_path)
        assert r.returncode == 3, cmd
        assert "run `vprof init`" in r.stderr, cmd
