"""Readable kernel names: what a terminal column shows instead of a C++ signature.

Kernel names as profilers report them are demangled C++ (`void at::native::vectorized_elementwise_
kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, ...)`) or vendor
library symbols that encode the algorithm (`sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x256x8
_stage3_...`, `cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>`). Cut at a column,
both lose what tells kernels apart. `short_name` keeps that part: the vendor and algorithm for
library GEMMs (`xmma gemm f32 tn 64x256`, `cutlass simt sgemm 256x128 (nn)`), the operation for
PyTorch's templated kernels (`vectorized_elementwise<CUDAFunctor_add>`), and shorter aliases for
the long SDPA operator names (`aten::sdpa_flash`). The full name stays in every machine-readable
output (--json, --csv) and is shown on selection in the lab.

No pandas: the CLI's text output and the lab's tables call this per row.
"""

from __future__ import annotations

import functools
import re

#: Namespaces that repeat on every PyTorch kernel; vendor namespaces (cutlass::, cublasLt::,
#: pytorch_flash::, flash::) are kept because they say whose code runs.
_NOISE_NAMESPACES = re.compile(
    r"(?<!\w)(?:at::native::|at::cuda::|at::detail::|at::|c10::|std::|\(anonymous namespace\)::|"
    r"<?unnamed>::|templates::cuda::|templates::|binary_internal::|detail::)"
)
#: aten operator aliases: SDPA's backends have names longer than most columns.
_ATEN_ALIASES = (
    (re.compile(r"^aten::_scaled_dot_product_flash_attention_for_cpu(_backward)?$"), r"aten::sdpa_flash_cpu\1"),
    (re.compile(r"^aten::_scaled_dot_product_flash_attention(_backward)?$"), r"aten::sdpa_flash\1"),
    (re.compile(r"^aten::_scaled_dot_product_efficient_attention(_backward)?$"), r"aten::sdpa_efficient\1"),
    (re.compile(r"^aten::_scaled_dot_product_cudnn_attention(_backward)?$"), r"aten::sdpa_cudnn\1"),
    (re.compile(r"^aten::_scaled_dot_product_attention_math(_for_mps)?$"), r"aten::sdpa_math"),
    (re.compile(r"^aten::scaled_dot_product_attention$"), "aten::sdpa"),
)
_XMMA = re.compile(
    r"^(?:sm(\d+)_)?xmma_(gemm|conv\w*?)_([a-z]+\d+)[a-z0-9]*?_[a-z0-9]+_[a-z0-9]+_([nt]{2})_[nt]_"
    r"tilesize(\d+)x(\d+)x\d+\w*$"
)
_CUTLASS_SIMT = re.compile(r"cutlass_(\d+)_(simt|tensorop|wmma)_([a-z0-9]*gemm\w*?)_(\d+)x(\d+)_\w*?_([nt]{2})_align")
_CUTLASS_NAMED = re.compile(r"cutlass_(\d+)_(simt|tensorop|wmma)_(\w+?)_(\d+)x(\d+)_")
_ARCH_GEMM = re.compile(r"^(ampere|volta|turing|maxwell|hopper|sm\d+)_(\w*?gemm\w*?)_(\d+)x(\d+)_(?:\w+_)?([nt]{2})$")
_NVJET = re.compile(r"^nvjet_(?:sm\d+_)?([a-z]+)_(\d+)x(\d+)_\w*?_([NT]{2,3})$")
_TENSILE = re.compile(r"^Cijk_(A[a-z]+)_(B[a-z]+)_([A-Z]+)_\w*?MT(\d+x\d+x\d+)")
#: Kernel-template arguments that name the operation (PyTorch's functors and the functions
#: whose lambdas a kernel runs), most specific first.
_OWNER = re.compile(r"([A-Za-z_]\w*)(?:<[^<>]*>)?\([^()]*\)(?:\s*const)?::[{\[]lambda")
_OWNER_SUFFIX = re.compile(r"(?:_kernel(?:_cuda|_impl)?|_cuda)$")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_FUNCTOR = re.compile(r"Functor|Ops?$|_functor$|^(?:multiplies|divides|plus|minus|Sqrt)$")
_GENERIC_FUNCTORS = {
    "BinaryFunctor", "AUnaryFunctor", "BUnaryFunctor", "UnaryOpFunctor", "BinaryOpScalarFunctor",
    "BinaryOpScalarListFunctor", "PointwiseOpScalarFunctor", "PointwiseOpScalarListFunctor",
    "TernaryOpScalarFunctor", "ReduceOp", "func_wrapper_t", "BinaryOpListAlphaFunctor", "UnaryOp",
}


@functools.lru_cache(maxsize=65536)
def short_name(name: str) -> str:
    """The part of a kernel name that tells it apart, for a terminal column (see the module doc)."""
    text = str(name).strip()
    for pattern, alias in _ATEN_ALIASES:
        if pattern.match(text):
            return pattern.sub(alias, text)
    if text.startswith("void "):
        text = text[5:]
    vendor = _vendor_gemm(text)
    if vendor:
        return vendor
    text = _drop_arguments(text)
    text = _NOISE_NAMESPACES.sub("", text).strip()
    lt = text.find("<")
    if lt <= 0:
        return text or str(name)
    base, args = text[:lt], text[lt + 1:]
    vendor = _vendor_gemm(args)  # cutlass::Kernel2<cutlass_80_simt_sgemm_...>
    if vendor:
        return vendor
    op = _operation(args)
    base = re.sub(r"_kernel$", "", base)
    return f"{base}<{op}>" if op else f"{base}<…>"


def _vendor_gemm(text: str) -> str | None:
    """`xmma gemm f32 tn 64x256`, `cutlass simt sgemm 256x128 (nn)`, ...: the library's own
    encoding of its algorithm, kept in words (vendor, data type, transposes, tile)."""
    m = _XMMA.match(text)
    if m:
        _, kind, dtype, trans, tm, tn = m.groups()
        return f"xmma {kind} {dtype} {trans} {tm}x{tn}" + (" split-k" if "split_k" in text else "")
    m = _CUTLASS_SIMT.search(text)
    if m:
        _, kind, op, tm, tn, trans = m.groups()
        return f"cutlass {kind} {op} {tm}x{tn} ({trans})"
    m = _CUTLASS_NAMED.search(text)
    if m:
        _, kind, op, tm, tn = m.groups()
        return f"cutlass {kind} {op} {tm}x{tn}"
    m = _ARCH_GEMM.match(text)
    if m:
        arch, op, tm, tn, trans = m.groups()
        return f"{arch} {op} {tm}x{tn} ({trans})"
    m = _NVJET.match(text)
    if m:
        kind, tm, tn, trans = m.groups()
        return f"nvjet {kind} {tm}x{tn} ({trans})"
    m = _TENSILE.match(text)
    if m:
        a, b, types, tile = m.groups()
        return f"tensile {types} {tile} ({a}_{b})"
    return None


def _drop_arguments(text: str) -> str:
    """Without the trailing argument list: `kernel<...>(int, Functor, ...)` -> `kernel<...>`."""
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        ch = text[i]
        if ch in ")>]}":
            depth += 1
        elif ch in "(<[{":
            depth -= 1
            if depth == 0:
                return text[:i] if ch == "(" and i > 0 else text
    return text


def _operation(args: str) -> str | None:
    """The operation a templated kernel runs, from its template arguments: the function that
    owns its lambda (`direct_copy_kernel_cuda(...)::{lambda...}` -> direct_copy), else the
    innermost specific functor (`BinaryFunctor<..., MulFunctor<float>>` -> MulFunctor)."""
    owner = _OWNER.search(args)
    if owner:
        return _OWNER_SUFFIX.sub("", owner.group(1))
    functors = [f for f in _IDENTIFIER.findall(args) if _FUNCTOR.search(f) and f not in _GENERIC_FUNCTORS]
    return functors[-1] if functors else None


def short_names(names: list[str]) -> list[str]:
    """short_name of each, with " #2", " #3"... on repeats, so that kernels whose short names
    coincide (two template instances of one softmax kernel) stay apart in a table; a name listed
    twice (one kernel on two ranks) keeps one short name."""
    seen: dict[str, int] = {}
    given: dict[str, str] = {}
    for name in dict.fromkeys(names):
        short = short_name(name)
        seen[short] = seen.get(short, 0) + 1
        given[name] = short if seen[short] == 1 else f"{short} #{seen[short]}"
    return [given[name] for name in names]
