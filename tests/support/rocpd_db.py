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
