"""Fixtures of the runtime's end-to-end tests: compile small C programs against the
built libvprof_rt and run them with a trace directory."""
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


class Toolchain:
    def __init__(self, root, build_dir, tmp_factory):
        self.root, self.build_dir = root, build_dir
        self.libdir = build_dir / "runtime"
        self.out = tmp_factory.mktemp("rtbin")
        if not (self.libdir / "libvprof_rt.so").exists():
            pytest.skip(f"{self.libdir}/libvprof_rt.so not built (target vprof_rt)")
        self.includes = [f"-I{root}/runtime/include", f"-I{root}/annotations/include"]

    def compile(self, name, extra=(), cc="cc", std="-std=gnu11"):
        """Builds programs/<name>.c into an executable linked with libvprof_rt."""
        exe = self.out / (name + "".join(e.replace("-", "_") for e in extra))
        if not exe.exists():
            cmd = [cc, std, "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-DVPROF_ENABLE",
                   *self.includes, *extra, f"{HERE}/programs/{name}.c", "-o", str(exe),
                   f"-L{self.libdir}", "-lvprof_rt", f"-Wl,-rpath,{self.libdir}",
                   "-pthread"]
            subprocess.run(cmd, check=True)
        return exe

    def run(self, exe, args=(), trace=None, env=None, timeout=120, check=True):
        e = {k: v for k, v in os.environ.items() if not k.startswith("VPROF_")}
        if trace is not None:
            e["VPROF_TRACE_DIR"] = str(trace)
        e.update(env or {})
        p = subprocess.run([str(exe), *map(str, args)], env=e, capture_output=True,
                           timeout=timeout)
        if check:
            assert p.returncode == 0, (p.returncode, p.stderr.decode())
        return p


@pytest.fixture(scope="session")
def tc(root, build_dir, tmp_path_factory):
    return Toolchain(root, build_dir, tmp_path_factory)
