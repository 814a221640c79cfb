"""The runtime binding (norm_mlir._runtime) against the library it loads,
without a GPU: the binding's view of the C header and of the manifest
schema is the library's (normrt_manifest_schema), and what the compiler
writes is what that schema describes.

Run from a build tree (NORM_MLIR_LIB_DIR=build/lib) or an installed wheel:
    python3 -m pytest python/tests -q
"""

import copy

import pytest

import norm_mlir
from norm_mlir import _libs, _runtime


@pytest.fixture(scope="module")
def schema():
    return _libs.runtime().manifest_schema()


def test_binding_agrees_with_the_library(schema):
    # _libs.runtime() refuses a library that disagrees; say where if not.
    assert _runtime.check_schema(schema) == []
    assert schema["format_version"] == _runtime.FORMAT_VERSION
    assert schema["c_api"]["max_rank"] == _runtime.MAX_RANK
    assert list(schema["argument_kinds"]) == list(_runtime.ARGUMENT_KINDS)


def test_a_disagreement_is_refused(schema, monkeypatch):
    changed = copy.deepcopy(schema)
    changed["c_api"]["dtype"]["bf16"] = 7
    assert [p.split(":")[0] for p in _runtime.check_schema(changed)] == [
        "dtype codes"]
    monkeypatch.setattr(_runtime, "FORMAT_VERSION", 1)
    with pytest.raises(RuntimeError, match="format_version: the binding has "
                       "1, the library 2"):
        _runtime.Runtime(_libs.runtime_path())


@pytest.mark.parametrize("spec", [
    dict(op="layer_norm_grad", n=4096, dtype="bf16"),
    dict(op="rms_norm", n=1000, dtype="f32"),
])
def test_compiled_manifests_follow_the_schema(schema, spec):
    """Every key the compiler writes is a field of its object, each argument
    has the kind of its name (the ops name arguments by role), and the
    manifest loads."""
    k = norm_mlir.compile_spec(chip="sm_90", format="ptx", **spec)
    m, objects = k.manifest, schema["objects"]
    assert set(m) <= set(objects["manifest"])
    assert m["format_version"] == _runtime.FORMAT_VERSION
    assert set(m.get("spec", {})) <= set(objects["spec"])
    for a in m["arguments"]:
        assert set(a) <= set(objects["argument"])
        assert a["kind"] == a["name"], a
        assert a["role"] in schema["argument_kinds"][a["kind"]]["roles"]
    for w in m.get("workspaces", []):
        assert set(w) <= set(objects["workspace"])
    for kern in m["kernels"]:
        assert set(kern) <= set(objects["kernel"])
        assert kern["kind"] in _runtime.KERNEL_KINDS
        for p in kern["params"]:
            assert set(p) <= set(objects["param"])
    _libs.runtime().load_manifest_only(k.manifest_text).close()
