"""Build rocpd SQLite databases with the documented schema (docs/formats.md 1.5); no real .db exists.

Physical tables carry a per-process UUID suffix; the un-suffixed names are views, and the
`kernels` view joins dispatches with kernel symbols and strings. Used by the parser tests and
by the rocprofv3 stand-in (which imports this file by path, so it must stay stdlib-only).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

UUID = "0000ddb5_8903_7903_b269_cd8d3745bb8a"
DISPATCH_COLUMNS = (
    "id, guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, end, "
    "private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, "
    "grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id, extdata"
)
SYMBOL_COLUMNS = (
    "id, guid, nid, pid, code_object_id, kernel_name, display_name, kernel_object, kernarg_segment_size, "
    "kernarg_segment_alignment, group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count, "
    "accum_vgpr_count, extdata"
)
KERNELS_VIEW_COLUMNS = (
    "id, guid, tid, category, region, name, nid, pid, agent_abs_index, agent_log_index, agent_type_index, "
    "agent_type, code_object_id, kernel_id, dispatch_id, stream_id, queue_id, queue, stream, start, end, "
    "duration, grid_x, grid_y, grid_z, workgroup_x, workgroup_y, workgroup_z, lds_size, scratch_size, "
    "vgpr_count, accum_vgpr_count, sgpr_count, static_lds_size, static_scratch_size, stack_id, "
    "parent_stack_id, corr_id"
)


def _quote(columns: str) -> str:
    return ", ".join(f'"{c.strip()}"' for c in columns.split(","))


def write_rocpd(path: Path, dispatches: list[tuple[str, int, int]], *, views: bool = True,
                kernels_view: str = "working", suffix: str = UUID) -> None:
    """dispatches: (kernel name, start ns, end ns). kernels_view: working | empty | none.

    "empty" reproduces the caveat that `kernels` INNER JOINs rocpd_string and can return
    nothing; "none" leaves the view out; views=False leaves only the suffixed tables.
    """
    con = sqlite3.connect(path)
    dispatch, symbol, strings = (f"rocpd_kernel_dispatch_{suffix}", f"rocpd_info_kernel_symbol_{suffix}",
                                 f"rocpd_string_{suffix}")
    con.execute(f'CREATE TABLE "{dispatch}" ({_quote(DISPATCH_COLUMNS)})')
    con.execute(f'CREATE TABLE "{symbol}" ({_quote(SYMBOL_COLUMNS)})')
    con.execute(f'CREATE TABLE "{strings}" ("id", "guid", "string")')
    names = sorted({name for name, _, _ in dispatches})
    symbol_id = {name: i + 1 for i, name in enumerate(names)}
    for name, i in symbol_id.items():
        mangled = "_Z" + str(len(name)) + name.split("(")[0].replace(" ", "_")
        con.execute(f'INSERT INTO "{symbol}" ("id", "guid", "nid", "pid", "kernel_name", "display_name") '
                    "VALUES (?, 'g', 1, 4242, ?, ?)", (i, mangled, name))
    for n, (name, start, end) in enumerate(dispatches, 1):
        con.execute(f'INSERT INTO "{dispatch}" ("id", "guid", "nid", "pid", "tid", "agent_id", "kernel_id", '
                    '"dispatch_id", "queue_id", "stream_id", "start", "end", "region_name_id") '
                    "VALUES (?, 'g', 1, 4242, 4242, 4, ?, ?, 1, 0, ?, ?, 1)",
                    (n, symbol_id[name], n, start, end))
    if kernels_view == "working":
        con.execute(f'INSERT INTO "{strings}" VALUES (1, \'g\', \'KERNEL_DISPATCH\')')
    if views:
        con.execute(f'CREATE VIEW "rocpd_kernel_dispatch" AS SELECT * FROM "{dispatch}"')
        con.execute(f'CREATE VIEW "rocpd_info_kernel_symbol" AS SELECT * FROM "{symbol}"')
        con.execute(f'CREATE VIEW "rocpd_string" AS SELECT * FROM "{strings}"')
        if kernels_view in ("working", "empty"):
            select = ", ".join([
                "K.id", "K.guid", "K.tid", "S.string AS category", "S.string AS region", "Y.display_name AS name",
                "K.nid", "K.pid", "K.agent_id AS agent_abs_index", "K.agent_id AS agent_log_index",
                "K.agent_id AS agent_type_index", "'GPU' AS agent_type", "Y.code_object_id", "K.kernel_id",
                "K.dispatch_id", "K.stream_id", "K.queue_id", "'' AS queue", "'' AS stream", "K.start", "K.end",
                "(K.end - K.start) AS duration", "K.grid_size_x AS grid_x", "K.grid_size_y AS grid_y",
                "K.grid_size_z AS grid_z", "K.workgroup_size_x AS workgroup_x", "K.workgroup_size_y AS workgroup_y",
                "K.workgroup_size_z AS workgroup_z", "K.group_segment_size AS lds_size",
                "K.private_segment_size AS scratch_size", "Y.arch_vgpr_count AS vgpr_count",
                "Y.accum_vgpr_count", "Y.sgpr_count", "Y.group_segment_size AS static_lds_size",
                "Y.private_segment_size AS static_scratch_size", "NULL AS stack_id", "NULL AS parent_stack_id",
                "K.id AS corr_id",
            ])
            con.execute(f"CREATE VIEW kernels AS SELECT {select} FROM rocpd_kernel_dispatch K "
                        "INNER JOIN rocpd_info_kernel_symbol Y ON Y.id = K.kernel_id "
                        "INNER JOIN rocpd_string S ON S.id = K.region_name_id")
    con.commit()
    con.close()


#: rocprofiler-sdk's own schema files (tests/support/rocpd_schema, vendored with their licence), in
#: the order the SDK loads them (source/lib/rocprofiler-sdk-rocpd/sql.cpp:137-142).
SCHEMA = Path(__file__).resolve().parent / "rocpd_schema"
SCHEMA_FILES = ("rocpd_tables.sql", "rocpd_indexes.sql", "rocpd_views.sql", "data_views.sql", "summary_views.sql",
                "marker_views.sql")
#: A UUIDv7 as generateRocpd.cpp:589-592 makes one for a process (guid); its table suffix is "_" and
#: the guid with "-" replaced by "_" (rocprofiler-sdk-rocpd/sql.cpp:206-219).
GUID = "0198a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


def sdk_schema(guid: str = GUID) -> str:
    """The SDK's schema with {{uuid}} and {{guid}} filled the way the SDK fills them."""
    uuid = "_" + guid.replace("-", "_")
    text = "\n".join((SCHEMA / name).read_text(encoding="utf-8") for name in SCHEMA_FILES)
    return text.replace("{{uuid}}", uuid).replace("{{guid}}", guid)


def write_sdk_rocpd(path: Path, dispatches: list[tuple[str, int, int]], regions: list[tuple[str, int, int]] = (),
                    *, pid: int = 4242, guid: str = GUID) -> None:
    """A rocpd database made from the SDK's own schema: one node, process, thread, GPU agent, queue and
    stream, a kernel symbol a name, a dispatch (name, start ns, end ns) each, and `regions` (name, start,
    end) as marker regions named after their ROCTx message, as rocprofv3 writes them from ROCm 10.1."""
    sfx = "_" + guid.replace("-", "_")
    con = sqlite3.connect(path)
    con.executescript(sdk_schema(guid))

    def insert(table: str, **values) -> int:
        cols = ", ".join(f'"{c}"' for c in values)
        cur = con.execute(f'INSERT INTO "rocpd_{table}{sfx}" ({cols}) VALUES ({", ".join("?" * len(values))})',
                          tuple(values.values()))
        return cur.lastrowid

    strings: dict[str, int] = {}

    def string(text: str) -> int:
        if text not in strings:
            strings[text] = insert("string", string=text)
        return strings[text]

    nid = insert("info_node", hash=1, machine_id="standin", hostname="standin")
    proc = insert("info_process", nid=nid, pid=pid)
    tid = insert("info_thread", nid=nid, pid=proc, tid=pid)
    agent = insert("info_agent", nid=nid, pid=proc, type="GPU", absolute_index=0, logical_index=0, type_index=0)
    queue = insert("info_queue", nid=nid, pid=proc, name="queue 0")
    stream = insert("info_stream", nid=nid, pid=proc, name="stream 0")
    code = insert("info_code_object", nid=nid, pid=proc, agent_id=agent)
    symbols = {}
    for name in sorted({name for name, _, _ in dispatches}):
        symbols[name] = insert("info_kernel_symbol", nid=nid, pid=proc, code_object_id=code,
                               kernel_name="_Z" + str(len(name)) + name.split("(")[0].replace(" ", "_"), display_name=name)
    category = string("KERNEL_DISPATCH")
    for n, (name, start, end) in enumerate(dispatches, 1):
        event = insert("event", category_id=category, stack_id=n, correlation_id=n)
        insert("kernel_dispatch", nid=nid, pid=proc, tid=tid, agent_id=agent, kernel_id=symbols[name], dispatch_id=n,
               queue_id=queue, stream_id=stream, start=start, end=end, workgroup_size_x=64, workgroup_size_y=1,
               workgroup_size_z=1, grid_size_x=1024, grid_size_y=1, grid_size_z=1, region_name_id=category,
               event_id=event)
    marker = string("MARKER_CORE_RANGE_API")
    for name, start, end in regions:
        event = insert("event", category_id=marker)
        insert("region", nid=nid, pid=proc, tid=tid, start=start, end=end, name_id=string(name), event_id=event)
    con.commit()
    con.close()
