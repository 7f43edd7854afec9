#!/usr/bin/python3
"""Writes the malformed-input corpus of tests/data/bad/ and its MANIFEST.tsv.

Every case is one addsim command line on hostile input (scene, task, mesh, OBJ, marker CSV
files, or command-line flags). tests/cli/test_bad_inputs.cpp runs each and expects exit 2
(bad input) or 3 (failed run), one stderr line "addsim: error: ..." containing the case's
fragment (the file and the key path or line), and never "internal error".

Usage: /usr/bin/python3 tests/data/bad/make_corpus.py   (rewrites the corpus in place)
MANIFEST.tsv columns: id, arguments ({bad} = this folder, {tmp} = a fresh temp folder;
split on single spaces), expected fragment of the error line, and the name of the file the
error line must name (empty for command-line cases that involve no file).
"""

import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
for sub in ("scenes", "tasks", "meshes", "data"):
    shutil.rmtree(os.path.join(HERE, sub), ignore_errors=True)
cases = []


def write(rel, text):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        f.write(text)


def case(cid, args, fragment, names=""):
    assert "\t" not in args and "\t" not in fragment
    cases.append((cid, args, fragment, names))


PARTICLE = {"type": "particles", "name": "p", "positions": [[0, 0, 1]], "mass": 1}
BASE = {"dt": 0.01, "steps": 5, "bodies": [PARTICLE]}
MATERIAL = {"youngs_modulus": 1e5, "poisson_ratio": 0.3, "density": 100}


def scene_text(cid, text, fragment, names=None):
    write("scenes/%s.json" % cid, text)
    name = "%s.json" % cid
    case("scene_" + cid, "simulate {bad}/scenes/%s --out {tmp}/o" % name,
         name + fragment if fragment.startswith(":") else fragment, names or name)


def scene_doc(cid, doc, fragment, names=None):
    scene_text(cid, json.dumps(doc, indent=1) + "\n", fragment, names)


def with_(**kw):
    d = json.loads(json.dumps(BASE))
    d.update(kw)
    return d


def body(**kw):
    b = dict(PARTICLE)
    b.update(kw)
    return with_(bodies=[b])


# --- JSON syntax (defect 10) and nesting (defect 2) ---------------------------------
scene_text("syntax_comment", '{\n  // the step\n  "dt": 0.01\n}\n', ":2:3: JSON has no comments")
scene_text("syntax_block_comment", '{"dt": 0.01 /* s */}\n', ":1:13: dt: JSON has no comments")
scene_text("syntax_hash_comment", '# scene\n{}\n', ":1:1: JSON has no comments")
scene_text("syntax_nan", '{\n  "dt": NaN\n}\n', ":2:9: dt: JSON has no NaN or Infinity")
scene_text("syntax_infinity", '{"gravity": [0, 0, -Infinity]}\n', "gravity.2: JSON has no NaN or Infinity")
scene_text("syntax_inf_lower", '{"dt": inf}\n', "dt: JSON has no NaN or Infinity")
scene_text("syntax_trailing_comma_list", '{"gravity": [0, 0, -9.81,]}\n', "trailing comma before ']'")
scene_text("syntax_trailing_comma_object", '{"dt": 0.01,\n}\n', ":2:1: dt: trailing comma before '}'")
scene_text("syntax_single_quotes", "{'dt': 0.01}\n", ":1:2: JSON strings and keys need double quotes")
scene_text("syntax_bare_key", '{dt: 0.01}\n', "object keys must be strings in double quotes, got dt")
scene_text("syntax_capital_true", '{"solver": {"reuse_factorization": True}}\n', "solver.reuse_factorization: JSON literals are lower case")
scene_text("syntax_truncated", '{"dt": 0.01, "bodies": [\n', "unexpected end")
scene_text("syntax_empty", "", ":1:1: unexpected end")
scene_text("syntax_only_spaces", "   \n\n", "unexpected end")
scene_text("syntax_missing_colon", '{"dt" 0.01}\n', ":1:10: dt: syntax error while parsing object separator")
scene_text("syntax_missing_comma", '{"dt": 0.01 "steps": 3}\n', ":1:19: dt: syntax error")
scene_text("syntax_unclosed_string", '{"name": "abc\n}\n', "name: syntax error")
scene_text("syntax_control_char", '{"name": "a\tb"}\n', "name: syntax error")
scene_text("syntax_bad_escape", '{"name": "a\\qb"}\n', "name: syntax error")
scene_text("syntax_garbage_after", '{"dt": 0.01} x\n', ":1:14: syntax error")
scene_text("syntax_two_documents", '{"dt": 0.01}\n{"dt": 0.02}\n', ":2:1: syntax error")
scene_text("syntax_duplicate_key", '{"dt": 0.01, "dt": 0.02}\n', "dt: duplicate key")
scene_text("syntax_number_overflow", '{"dt": 1e999}\n', "dt: number overflow")
scene_text("syntax_leading_zero", '{"steps": 012}\n', "steps: syntax error")
scene_text("syntax_hex", '{"steps": 0x10}\n', "steps: syntax error")
scene_text("syntax_plus_sign", '{"dt": +0.01}\n', "dt: syntax error")
scene_text("syntax_bom_twice", '\ufeff\ufeff{}\n', ":1:")
scene_text("syntax_binary", "\x00\x01\x02\x7f", ":1:1: ")
scene_text("nest_arrays_200000", "[" * 200000 + "]" * 200000 + "\n", ":1:65: ")
scene_text("nest_objects_1000", '{"a": ' * 1000 + "1" + "}" * 1000 + "\n", "nested more than 64 levels")
scene_text("nest_in_body", json.dumps(with_(bodies=[dict(PARTICLE, extra=json.loads("[" * 70 + "]" * 70))])),
           "bodies.0.extra.0.0")

# --- scene values ------------------------------------------------------------
scene_doc("top_not_object", [1, 2, 3], ": expected an object, got a list")
scene_doc("unknown_key", with_(dtt=0.01), ": dtt: unknown key")
scene_doc("dt_negative", with_(dt=-0.01), ": dt: must be > 0")
scene_doc("dt_zero", with_(dt=0), ": dt: must be > 0")
scene_doc("dt_string", with_(dt="0.01"), ": dt: expected a number")
scene_doc("steps_zero", with_(steps=0), ": steps: must be >= 1")
scene_doc("steps_float", with_(steps=2.5), ": steps: expected an integer")
scene_doc("steps_huge", with_(steps=10**12), ": steps: is too large")
scene_doc("steps_2e9", with_(steps=2**32), ": steps: is too large")
scene_doc("steps_1e9_memory", with_(steps=1000000000), ": steps: a trajectory of 1000000000 steps")
scene_doc("integrator_bad", with_(integrator="rk4"), ": integrator: must be one of")
scene_doc("gravity_short", with_(gravity=[0, -9.81]), ": gravity: expected a list of 3 numbers, got a list of 2 numbers")
scene_doc("gravity_null", with_(gravity=[0, 0, None]), ": gravity.2: expected a number, got null")
scene_doc("no_bodies", {"dt": 0.01}, ": bodies: a scene needs at least one body")
scene_doc("bodies_not_list", with_(bodies={"a": 1}), ": bodies: expected a list")
scene_doc("body_not_object", with_(bodies=[3]), ": bodies.0: expected an object")
scene_doc("body_type_bad", body(type="blob"), ": bodies.0.type: must be one of")
scene_doc("body_mass_negative", body(mass=-1), ": bodies.0.mass: must be > 0")
# Above 0 but below the parameter table's 1e-300 (1/m overflows): the file and key, not the table's message.
scene_doc("body_mass_subnormal", body(mass=1e-320), ": bodies.0.mass: must be >= 1e-300")
scene_doc("body_mass_huge", body(mass=1e308), "residual is not finite")
scene_doc("body_positions_empty", body(positions=[]), ": bodies.0.positions")
scene_doc("body_position_four", body(positions=[[0, 0, 1, 2]]),
          ": bodies.0.positions.0: expected a list of 3 numbers, got a list of 4 numbers")
scene_doc("spring_three_anchors", with_(bodies=[dict(PARTICLE, positions=[[0, 0, 1], [0, 0, 2]])],
                                        springs=[{"type": "distance", "stiffness": 1,
                                                  "anchors": [{"body": "p", "point": k} for k in (0, 1, 0)]}]),
          ": springs.0.anchors: expected a list of 2 anchors, got a list of 3 objects")
scene_doc("handles_nested_short", with_(handles=[{"positions": [[[0, 0, 0]]] * 6}]),
          ": handles.0.positions.0: expected a list of 3 numbers, got a list of 1 list")
scene_doc("body_position_nonnumber", body(positions=[[0, "a", 1]]), ": bodies.0.positions.0.1: expected a number")
scene_doc("body_name_number", body(name="12"), ": bodies.0.name: must not contain '.' or be a number")
scene_doc("body_name_dot", body(name="a.b"), ": bodies.0.name: must not contain '.'")
scene_doc("body_name_empty", body(name=""), ": bodies.0.name: must not be empty")
scene_doc("body_name_nul", body(name="ball\u0000x"), ": bodies.0.name: must not contain a control character (byte 0 at position 4)")
scene_doc("obstacle_name_newline", with_(obstacles=[{"type": "plane", "name": "floor\n"}]),
          ": obstacles.0.name: must not contain a control character (byte 10")
scene_doc("body_names_duplicate", with_(bodies=[PARTICLE, dict(PARTICLE)]), ": bodies.1.name: duplicate name")
scene_doc("contact_model_bad", with_(contact={"model": "magic"}), ": contact.model: must be one of")
scene_doc("contact_kn_negative", with_(contact={"kn": -5}), ": contact.kn: must be > 0")
scene_doc("solver_unknown", with_(solver={"tolerence": 1e-9}), ": solver.tolerence: unknown key")
SHEET = {"type": "sheet", "size": [1, 1], "resolution": [3, 3], "mass": 1, "stiffness": 10}
scene_doc("sheet_resolution_max", with_(bodies=[dict(SHEET, resolution=[10000, 10000])]),
          ": bodies.0.resolution: a sheet of 10000 x 10000 particles would need")
scene_doc("sheet_resolution_over", with_(bodies=[dict(SHEET, resolution=[10001, 2])]), ": bodies.0.resolution.0: expected an integer in [2, 10000]")
scene_doc("sheet_resolution_2e9", with_(bodies=[dict(SHEET, resolution=[4294967298, 2])]), ": bodies.0.resolution.0")
FEMBOX = {"type": "fem", "name": "b", "mesh": {"generator": "box", "size": [1, 1, 1], "target_tets": 6}, "material": MATERIAL}


def fem(mesh, **kw):
    b = dict(FEMBOX, mesh=mesh)
    b.update(kw)
    return with_(bodies=[b])


scene_doc("box_aspect_extreme", fem({"generator": "box", "size": [1e6, 1e-6, 1e-6], "target_tets": 6}),
          ": bodies.0.mesh.generator: box mesh: 1e+08 x 1 x 1 cells")
scene_doc("box_aspect_1e300", fem({"generator": "box", "size": [1e300, 1e-300, 1], "target_tets": 6}),
          "more than the limit of 1e8 tetrahedra")
scene_doc("box_target_over", fem({"generator": "box", "size": [1, 1, 1], "target_tets": 2000001}),
          ": bodies.0.mesh.target_tets: must be at most 2000000")
scene_doc("box_target_2m", fem({"generator": "box", "size": [1, 1, 1], "target_tets": 2000000}),
          ": bodies.0.mesh.target_tets: an FEM body of 2000000 tetrahedra would need")
scene_doc("box_size_zero", fem({"generator": "box", "size": [1, 0, 1], "target_tets": 6}), ": bodies.0.mesh.size")
scene_doc("mesh_missing_file", fem("nothere.msh"), "nothere.msh: no such mesh file")
scene_doc("mesh_directory", fem("."), ": bodies.0.mesh")
scene_doc("mesh_dev_zero", fem("/dev/zero"), ": bodies.0.mesh")
scene_doc("mesh_bad_extension", fem("mesh.vtk"), "unknown extension")
scene_doc("handles_too_short", with_(handles=[{"positions": [[0, 0, 0]]}]), ": handles.0.positions: needs steps + 1 = 6 entries")

# --- Gmsh .msh, format 2.2 and 4.1 ---------------------------------------------
MSH2_HEAD = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"
MSH4_HEAD = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n"
TET_NODES2 = "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n$EndNodes\n"


def mesh_case(cid, name, text, fragment, names=None):
    write("meshes/" + name, text)
    scene_doc("mesh_" + cid, fem("../meshes/" + name), fragment, names or name)


mesh_case("msh2_huge_nodes", "huge_nodes.msh", MSH2_HEAD + "$Nodes\n1000000000000000\n1 0 0 0\n$EndNodes\n",
          "huge_nodes.msh:5: the header announces 1000000000000000 nodes, but the file")
mesh_case("msh2_negative_nodes", "neg_nodes.msh", MSH2_HEAD + "$Nodes\n-4\n$EndNodes\n", "neg_nodes.msh:5: negative node count -4")
mesh_case("msh2_huge_elements", "huge_elements.msh", MSH2_HEAD + TET_NODES2 + "$Elements\n9223372036854775807\n$EndElements\n",
          "huge_elements.msh:12: the header announces 9223372036854775807 elements")
mesh_case("msh2_overflow_count", "overflow_count.msh", MSH2_HEAD + "$Nodes\n99999999999999999999999\n$EndNodes\n",
          "overflow_count.msh:5: bad node count")
mesh_case("msh2_unknown_node", "unknown_node.msh", MSH2_HEAD + TET_NODES2 + "$Elements\n1\n1 4 0 1 2 3 99\n$EndElements\n",
          "unknown_node.msh:13: element refers to unknown node 99")
mesh_case("msh2_short_tet", "short_tet.msh", MSH2_HEAD + TET_NODES2 + "$Elements\n1\n1 4 0 1 2 3\n$EndElements\n",
          "short_tet.msh:13: tetrahedron with fewer than 4 nodes")
mesh_case("msh2_bad_coord", "bad_coord.msh", MSH2_HEAD + "$Nodes\n1\n1 0 zero 0\n$EndNodes\n", "bad_coord.msh:6: bad node line")
mesh_case("msh2_truncated", "truncated.msh", MSH2_HEAD + "$Nodes\n4\n1 0 0 0\n", "truncated.msh:6: unexpected end of file")
mesh_case("msh2_no_tets", "no_tets.msh", MSH2_HEAD + TET_NODES2 + "$Elements\n1\n1 2 0 1 2 3\n$EndElements\n",
          "no_tets.msh: the file contains no tetrahedra")
mesh_case("msh2_flat_tet", "flat_tet.msh", MSH2_HEAD + "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 1 1 0\n$EndNodes\n"
          "$Elements\n1\n1 4 0 1 2 3 4\n$EndElements\n", "rest element 0 (nodes 0 1 2 3) is degenerate",
          "mesh_msh2_flat_tet.json")
mesh_case("msh_binary", "binary.msh", "$MeshFormat\n2.2 1 8\n$EndMeshFormat\n", "binary.msh:2: binary .msh files are not supported")
mesh_case("msh_version3", "v3.msh", "$MeshFormat\n3.0 0 8\n$EndMeshFormat\n", "v3.msh:2: unsupported msh format version")
# Found by fuzz_msh: a version beyond int (cast to int was undefined behaviour).
mesh_case("msh_version_huge", "version_huge.msh", "$MeshFormat\n3e112 0 8\n$EndMeshFormat\n",
          "version_huge.msh:2: unsupported msh format version 3e+112")
mesh_case("msh_version40", "v40.msh", "$MeshFormat\n4.0 0 8\n$EndMeshFormat\n", "v40.msh:2: msh format 4.0 is not supported")
mesh_case("msh_no_format", "no_format.msh", TET_NODES2, "no_format.msh:1: $Nodes before $MeshFormat")
mesh_case("msh_not_msh", "text.msh", "hello world\n", "text.msh: not a Gmsh .msh file")
mesh_case("msh4_negative_block", "neg_block.msh", MSH4_HEAD + "$Nodes\n1 4 1 4\n3 1 0 -7\n$EndNodes\n",
          "neg_block.msh:6: negative node count -7")
mesh_case("msh4_huge_block", "huge_block.msh", MSH4_HEAD + "$Nodes\n1 4 1 4\n3 1 0 100000000000\n1\n$EndNodes\n",
          "huge_block.msh:6: the header announces 100000000000 nodes")
mesh_case("msh4_huge_blocks", "huge_blocks.msh", MSH4_HEAD + "$Nodes\n99999999999 4 1 4\n$EndNodes\n",
          "huge_blocks.msh:5: the header announces 99999999999 node blocks")
mesh_case("msh4_huge_total", "huge_total.msh", MSH4_HEAD + "$Nodes\n1 4000000000000 1 4\n$EndNodes\n",
          "huge_total.msh:5: the header announces 4000000000000 nodes")
mesh_case("msh4_negative_elements", "neg_elements.msh", MSH4_HEAD + "$Nodes\n0 0 0 0\n$EndNodes\n$Elements\n1 1 1 1\n3 1 4 -1\n$EndElements\n",
          "neg_elements.msh:9: negative element count -1")
mesh_case("msh4_bad_header", "bad_header.msh", MSH4_HEAD + "$Nodes\n1 4\n$EndNodes\n", "bad_header.msh:5: bad $Nodes header")
mesh_case("msh4_bad_tag", "bad_tag.msh", MSH4_HEAD + "$Nodes\n1 1 1 1\n3 1 0 1\nx\n0 0 0\n$EndNodes\n", "bad_tag.msh:7: bad node tag")

# --- TetGen .node/.ele ---------------------------------------------------------
NODE_OK = "4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n"


def tetgen_case(cid, node, ele, fragment):
    if node is not None:
        write("meshes/%s.node" % cid, node)
    if ele is not None:
        write("meshes/%s.ele" % cid, ele)
    scene_doc("tetgen_" + cid, fem("../meshes/%s.node" % cid), fragment, cid)


tetgen_case("huge_nodes", "4000000000 3 0 0\n1 0 0 0\n", "1 4 0\n1 1 2 3 4\n", "huge_nodes.node:1: the header announces 4000000000 nodes")
tetgen_case("negative_nodes", "-1 3 0 0\n", "1 4 0\n1 1 2 3 4\n", "negative_nodes.node:1: negative node count -1")
tetgen_case("huge_tets", NODE_OK, "99999999999999 4 0\n1 1 2 3 4\n", "huge_tets.ele:1: the header announces 99999999999999 tetrahedra")
tetgen_case("negative_tets", NODE_OK, "-3 4 0\n", "negative_tets.ele:1: negative tetrahedron count -3")
tetgen_case("dim2", "4 2 0 0\n", "1 4 0\n", "dim2.node:1: dimension must be 3")
tetgen_case("per_tet_5", NODE_OK, "1 5 0\n1 1 2 3 4 5\n", "per_tet_5.ele:1: nodes per tetrahedron must be 4 or 10")
tetgen_case("unknown_node", NODE_OK, "1 4 0\n1 1 2 3 9\n", "unknown_node.ele:2: tetrahedron refers to unknown node 9")
tetgen_case("missing_ele", NODE_OK, None, "missing_ele.ele: no such TetGen element file")
tetgen_case("garbage_header", "four 3 0 0\n", "1 4 0\n", "garbage_header.node:1: bad .node header")

# --- OBJ surfaces (rigid mesh shapes) -----------------------------------------
VERTS = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n"


def obj_case(cid, text, fragment, names=None):
    write("meshes/%s.obj" % cid, text)
    shape = {"type": "mesh", "file": "../meshes/%s.obj" % cid}
    scene_doc("obj_" + cid, with_(bodies=[{"type": "rigid", "name": "r", "shape": shape, "density": 100}]), fragment,
              names or "%s.obj" % cid)


obj_case("index_text", VERTS + "f 1 2 x\n", "index_text.obj:5: face entry \"x\" is not a vertex index")
obj_case("index_overflow", VERTS + "f 1 2 99999999999999999999\n", "index_overflow.obj:5: face entry \"99999999999999999999\"")
obj_case("index_over_int", VERTS + "f 1 2 3000000000\n", "index_over_int.obj:5: face entry \"3000000000\"")
obj_case("index_zero", VERTS + "f 0 1 2\n", "index_zero.obj:5: face entry \"0\"")
obj_case("index_negative_past", VERTS + "f 1 2 -9\n", "index_negative_past.obj:5: face entry \"-9\"")
obj_case("index_missing", VERTS + "f 1 2 9\n", "index_missing.obj: triangle refers to missing vertex 9")
obj_case("two_corners", VERTS + "f 1 2\n", "two_corners.obj:5: face with fewer than 3 vertices")
obj_case("vertex_nan", "v 0 0 nan\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", "vertex_nan.obj:1: bad vertex line")
obj_case("no_faces", VERTS, "no_faces.obj: mesh has no triangles")
obj_case("inside_out", VERTS + "f 1 2 3\nf 1 4 2\nf 1 3 4\nf 2 4 3\n", "bodies.0.shape.file: mesh encloses no positive volume",
         "obj_inside_out.json")

# --- tasks and marker data ---------------------------------------------------
TASK = {"scene": "../scenes/ok_particle.json", "parameters": ["bodies.p.velocities"],
        "objective": [{"type": "com_target", "body": "p", "target": [0.1, 0, 0.9]}]}
write("scenes/ok_particle.json", json.dumps(BASE) + "\n")


def task_text(cid, text, fragment, names=None):
    name = "%s.json" % cid
    write("tasks/" + name, text)
    case("task_" + cid, "gradient {bad}/tasks/" + name, name + fragment if fragment.startswith(":") else fragment,
         names or name)


def task_doc(cid, doc, fragment, names=None):
    task_text(cid, json.dumps(doc, indent=1) + "\n", fragment, names)


def task_with(**kw):
    d = json.loads(json.dumps(TASK))
    d.update(kw)
    return d


task_text("syntax_comment", '{\n  // task\n}\n', ":2:3: JSON has no comments")
task_text("syntax_nan_target", json.dumps(TASK).replace("0.9]", "NaN]"), "objective.0.target.2: JSON has no NaN")
task_text("nest_deep", "[" * 10000 + "]" * 10000, ":1:65: ")
task_doc("not_object", [TASK], ": a task must be a JSON object")
task_doc("scene_missing", task_with(scene="../scenes/none.json"), ": scene: ")
task_doc("scene_missing_named", task_with(scene="../scenes/none.json"), "none.json: no such scene file", "scene_missing_named.json")
task_doc("scene_dev_zero", task_with(scene="/dev/zero"), "/dev/zero: is not a regular file")
task_doc("parameter_unknown", task_with(parameters=["bodies.p.nothing"]), "bodies.p.nothing")
task_doc("objective_type_bad", task_with(objective=[{"type": "magic"}]), ": objective.0.type: must be one of")
task_doc("objective_body_bad", task_with(objective=[{"type": "com_target", "body": "q", "target": [0, 0, 0]}]), ": objective.0.body: no body named")
task_doc("objective_steps_outside", task_with(objective=[{"type": "com_target", "body": "p", "target": [0, 0, 0], "steps": [2, 50]}]),
         ": objective.0.steps: is empty or outside steps")
task_doc("set_scene_bad", task_with(set={"dt": -1}), "ok_particle.json: dt: must be > 0")
COM_P = {"type": "com_target", "body": "p", "target": [0, 0, 0]}
task_doc("tracked_node_outside", task_with(objective=[dict(COM_P, tracked={"nodes": [5]})]),
         ": objective.0.tracked.nodes.0: node 5 is outside [0, 0]")
task_doc("tracked_boundary_particles", task_with(objective=[dict(COM_P, tracked={"nodes": "boundary"})]),
         ": objective.0.tracked.nodes: \"boundary\" needs an FEM body")
task_doc("tracked_weights_count", task_with(objective=[dict(COM_P, tracked={"nodes": "all", "weights": [1, 2]})]),
         ": objective.0.tracked.weights: has 2 entries for 1 nodes")
task_doc("tracked_weights_zero", task_with(objective=[dict(COM_P, tracked={"nodes": [0], "weights": [0]})]),
         ": objective.0.tracked: tracked point: the weights sum to zero")
task_doc("tracked_key_unknown", task_with(objective=[dict(COM_P, tracked={"nodes": [0], "weigths": [1]})]),
         ": objective.0.tracked.weigths")
# A stage's scene override is named by the stage's key, not by the scene file (where dt is fine).
task_doc("stage_set_bad", task_with(stages=[{"name": "a", "set": {"dt": -1}}]), ": stages.0.set.dt: must be > 0, got -1")
task_doc("stage_set_nested_bad", task_with(stages=[{"name": "a"}, {"name": "b", "set": {"contact": {"kn": -5}}}]),
         ": stages.1.set.contact.kn: must be > 0, got -5")
task_doc("stage_set_bad_path", task_with(stages=[{"name": "a", "set": {"bodies.7.mass": 1}}]),
         ": stages.0.set.bodies.7.mass: bodies.7: index out of range")
task_doc("set_steps_huge", task_with(set={"steps": 1000000000}), "steps: a trajectory of 1000000000 steps")
MARKERS = {"type": "markers", "body": "p", "markers": [{"position": [0, 0, 1]}]}


def marker_case(cid, csv, fragment):
    write("data/%s.csv" % cid, csv)
    task_doc("markers_" + cid, task_with(objective=[dict(MARKERS, data="../data/%s.csv" % cid)]), fragment,
             "%s.csv" % cid)


marker_case("bad_header", "step,marker,x,y\n1,0,0,0\n", "bad_header.csv: header must be step,marker,x,y,z")
marker_case("not_number", "step,marker,x,y,z\n1,0,0,abc,1\n", "not_number.csv:2: \"abc\" is not a finite number")
marker_case("inf_value", "step,marker,x,y,z\n1,0,0,inf,1\n", "inf_value.csv:2: \"inf\" is not a finite number")
marker_case("columns", "step,marker,x,y,z\n1,0,0,0\n", "columns.csv:2: 4 columns, the header has 5")
marker_case("step_outside", "step,marker,x,y,z\n99,0,0,0,1\n", "step_outside.csv:2: step must be an integer in [0, 5]")
marker_case("step_fraction", "step,marker,x,y,z\n1.5,0,0,0,1\n", "step_fraction.csv:2: step must be an integer")
marker_case("marker_outside", "step,marker,x,y,z\n1,3,0,0,1\n", "marker_outside.csv:2: marker must be an integer in [0, 0]")
marker_case("empty", "", "empty.csv: empty data file")
# Excel's "CSV UTF-8" starts with a byte-order mark: the header is accepted, the step on line 2 is the error.
marker_case("bom", "\ufeffstep,marker,x,y,z\n99,0,0,0,1\n", "bom.csv:2: step must be an integer in [0, 5]")
# Blank lines count: the line number is the file's.
marker_case("blank_line", "step,marker,x,y,z\n\n99,0,0,0,1\n", "blank_line.csv:3: step must be an integer in [0, 5]")
for cid, value, shown in [("half", "0.5", "0.5"), ("negative", "-1", "-1"), ("two", "2", "2"), ("empty", "", "an empty field")]:
    marker_case("visible_" + cid, "step,marker,x,y,z,visible\n1,0,0,0,1,1\n2,0,0,0,1,%s\n" % value,
                "visible_%s.csv:3: column 6 (visible) must be 0 or 1, got %s" % (cid, shown))
task_doc("markers_missing", task_with(objective=[dict(MARKERS, data="../data/none.csv")]), "none.csv: no such data file",
         "none.csv")
task_doc("markers_dir", task_with(objective=[dict(MARKERS, data="../data")]), "../data: is a directory, not a data file", "data")

# --- command-line flags --------------------------------------------------------
S = "{bad}/scenes/ok_particle.json"
T = "{bad}/tasks/ok.json"
write("tasks/ok.json", json.dumps(TASK, indent=1) + "\n")
write("tasks/steps_objective.json", json.dumps(task_with(objective=[{"type": "com_target", "body": "p", "target": [0, 0, 0],
                                                                       "steps": [4, 5]}]), indent=1) + "\n")
write("regular_file", "a regular file, used as a path component\n")
LAND = "landscape " + T + " --axes bodies.p.velocities.0.0,bodies.p.velocities.0.1 --range 0:1,0:1 --no-png"
for cid, args, fragment, names in [
    ("simulate_dev_zero", "simulate /dev/zero", "/dev/zero: is not a regular file", "/dev/zero"),
    ("simulate_directory", "simulate {bad}", "is a directory, not a scene file", "{bad}"),
    ("simulate_missing", "simulate {bad}/none.json", "none.json: no such scene file", "none.json"),
    ("simulate_set_malformed", "simulate " + S + " --set dt", "--set dt: expected PATH=JSON", "ok_particle.json"),
    ("simulate_set_bad_path", "simulate " + S + " --set bodies.7.mass=1", "bodies.7: index out of range", "ok_particle.json"),
    ("simulate_set_nan", "simulate " + S + " --set dt=NaN", "dt: expected a number, got \"NaN\"", "ok_particle.json"),
    ("simulate_set_deep", "simulate " + S + " --set dt=" + "[" * 100 + "]" * 100, "nested more than 64 levels", ""),
    ("simulate_steps_zero", "simulate " + S + " --steps 0", "--steps", ""),
    ("simulate_steps_text", "simulate " + S + " --steps ten", "--steps", ""),
    ("simulate_steps_huge", "simulate " + S + " --steps 1000000000", "steps: a trajectory of 1000000000 steps", "ok_particle.json"),
    ("simulate_out_under_file", "simulate " + S + " --out {bad}/regular_file/out", "regular_file/out", "regular_file/out"),
    ("simulate_unknown_flag", "simulate " + S + " --bogus", "--bogus", ""),
    ("no_command", "", "A subcommand is required", ""),
    ("unknown_command", "frobnicate", "A subcommand is required", ""),
    ("gradient_out_under_file", "gradient " + T + " --out {bad}/regular_file/g.json", "--out: {bad}/regular_file", "regular_file"),
    ("gradient_out_directory", "gradient " + T + " --out {bad}", "is a directory, not a file", "{bad}"),
    ("gradient_method_bad", "gradient " + T + " --method magic", "--method", ""),
    ("gradcheck_tolerance_negative", "gradcheck " + T + " --tolerance -1", "--tolerance", ""),
    ("gradcheck_fd_step_text", "gradcheck " + T + " --fd-step abc", "--fd-step", ""),
    ("gradcheck_tolerance_nan", "gradcheck " + T + " --tolerance nan", "--tolerance: must be a finite number", ""),
    ("gradcheck_fd_step_inf", "gradcheck " + T + " --fd-step inf", "--fd-step", ""),
    ("gradient_steps_over_objective", "gradient {bad}/tasks/steps_objective.json --steps 2", "objective.0.steps", "steps_objective.json"),
    ("landscape_axes_unknown", LAND.replace("bodies.p.velocities.0.1", "bodies.p.nothing") + " --grid 2x2 --out {tmp}/l", "bodies.p.nothing", ""),
    ("landscape_grid_overflow", LAND + " --grid 46341x46341 --out {tmp}/l", "--grid: 46341x46341 is 2147488281 grid points", ""),
    ("landscape_grid_int_overflow", LAND + " --grid 99999999999x2 --out {tmp}/l", "--grid: must be NxM", ""),
    ("landscape_grid_one", LAND + " --grid 1x5 --out {tmp}/l", "--grid: must be NxM with integers >= 2", ""),
    ("landscape_out_under_file", LAND + " --grid 2x2 --out {bad}/regular_file/l", "--out: {bad}/regular_file/l: cannot create", "regular_file/l"),
    ("landscape_range_nan", LAND.replace("0:1,0:1", "nan:1,0:1") + " --grid 2x2 --out {tmp}/l", "--range", ""),
    ("landscape_same_axes", LAND.replace("0.1 --range", "0.0 --range") + " --grid 2x2 --out {tmp}/l", "--axes: the two axes are the same", ""),
]:
    case("cli_" + cid, args, fragment, names)

with open(os.path.join(HERE, "MANIFEST.tsv"), "w") as f:
    f.write("# id\targuments\texpected fragment\tfile named (generated by make_corpus.py)\n")
    for c in cases:
        f.write("\t".join(c) + "\n")
files = sum(len(fs) for _, _, fs in os.walk(HERE)) - 2
print("%d cases, %d files" % (len(cases), files))
