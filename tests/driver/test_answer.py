"""One answer everywhere (docs/analyzer.md, "The answer"): on the mini database, one
`vprof loop` iteration analyses the trace once; the text report (`vprof report`), the JSON
report (`vprof report --json`, field `answer`), the HTML report's sentence and the loop's
last line must name the same place with the same share, and the JSON's answer must be the
first place of the ranked places table (no front end picks a place of its own). The tail
view is there in every form too."""
import json
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
MINIDB = ROOT / "benchmarks" / "minidb"


@pytest.fixture(scope="module")
def analysed(build_dir, tmp_path_factory):
    subprocess.run(["cmake", "--build", str(build_dir), "--target", "vprof", "vprof-cc",
                    "vprof_rt"], check=True, capture_output=True, text=True)
    vprof = build_dir / "driver" / "vprof"
    project = tmp_path_factory.mktemp("answer") / "minidb"
    project.mkdir()
    (project / "vprof.toml").write_text(
        'compile_commands = "out/compile_commands.json"\n'
        f'build = \'make -s -B -C {MINIDB} OUT={project}/out CXX="$CXX" all\'\n'
        'workload = "out/minidb --txns 1500 --threads 8 --warehouses 1 --fsync off"\n'
        "depth = 1\nk = 3\n")
    subprocess.run(["make", "-s", "-C", str(MINIDB), f"OUT={project}/out", "compdb"],
                   check=True, capture_output=True, text=True)
    for args in (["init"], ["loop", "--iterations", "1", "--prune", "0"]):
        r = subprocess.run([str(vprof), "-C", str(project), *args], capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0, r.stderr[-3000:]
    return vprof, project, r.stdout


def report(vprof, project, *args) -> str:
    r = subprocess.run([str(vprof), "-C", str(project), "report", *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_every_front_end_names_the_same_answer(analysed):
    vprof, project, loop_out = analysed
    j = json.loads(report(vprof, project, "--json"))
    group = j["groups"][0]
    answer = group["answer"]
    assert answer["found"], answer
    # the analyzer's answer is its first ranked place, with that place's numbers
    first = group["places"][0]
    assert (answer["key"], answer["name"]) == (first["key"], first["name"])
    assert answer["share"] == first["share"] and answer["contribution"] == first["contribution"]
    sentence = answer["sentence"]
    assert sentence.startswith(answer["name"] + ": "), sentence
    share = f"{100 * answer['share']:.1f}%"
    contribution = f"{100 * answer['contribution']:.1f}%"
    assert f"{contribution} of Var(latency) (its own variance {share})" in sentence, sentence
    # the text report: the group's first lines after the latency
    text = report(vprof, project)
    first_group = text.split("== intervals: all")[1]
    head = first_group.split("where the variance comes from")[0]
    assert f"answer: {sentence}\n" in head, head
    # the HTML report's sentence (the page's data)
    page = next((project / ".vprof" / "reports").glob("iter-0.html")).read_text()
    data = json.loads(re.search(r'<script id="vprof-data" type="application/json">\n(.*?)\n'
                                r"</script>", page, re.S).group(1).replace("<\\/", "</"))
    assert data["groups"][0]["answer"] == sentence
    # the loop's last line
    last = loop_out.rstrip("\n").splitlines()[-1]
    assert last == f"answer: {sentence}", loop_out[-2000:]
    # and the chain the answer stands on ends at the place's context
    assert answer["chain"] and answer["node"] >= 0, answer


def test_the_tail_is_in_every_report(analysed):
    vprof, project, _ = analysed
    j = json.loads(report(vprof, project, "--json"))
    tail = j["groups"][0]["tail"]
    assert tail["percentile"] == 99 and tail["intervals"] >= 1
    assert tail["threshold_ns"] == pytest.approx(j["groups"][0]["latency"]["p99_ns"])
    assert tail["places"] and tail["places"][0]["excess_ns"] >= tail["places"][-1]["excess_ns"]
    text = report(vprof, project)
    assert re.search(r"\ntail: the (\d+ slowest intervals|slowest interval) \(L >= p99 = ", text), text[:3000]
    assert f"  {tail['places'][0]['name']}\n" in text.split("\ntail: the ")[1]
    page = next((project / ".vprof" / "reports").glob("iter-0.html")).read_text()
    assert '"tail":{' in page
