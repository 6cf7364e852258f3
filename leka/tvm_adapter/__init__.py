"""The one package that imports `tvm`.

TVM renames things between releases (tir -> tirx, nd -> runtime.tensor, profile=True removed in
0.27); keeping every call here means the next rename costs one package. One module per responsibility:

| module | what |
| --- | --- |
| `targets` | targets and devices of the backend table (`leka.backends`), codegen options |
| `errors` | `ImportFailure`, `error_text`: TVM errors as data |
| `importer` | torch.export -> Relax, lifted constants, TVMScript text <-> modules (exact: `relax_persisted`); a model whose `forward` keeps changing its own state is refused (`refuse_stateful_forward`) |
| `torch_ops` | ops the importer lacks: PyTorch decompositions first, then `custom_convert_map` converters |
| `recurrent` | `nn.LSTM` / `nn.GRU` exported as one custom op each and imported as one TIR time loop per layer and direction, not unrolled |
| `lowering` | the zero pipeline, DLight on GPUs, PrimFunc surgery, build, export |
| `kernel_cache` | a build that loads kernels compiled before (by structural hash) and compiles only new ones (llvm) |
| `runtime` | `VMRunner`: run and time a built executable, per-kernel profiles, memory plans |
| `call_loop` | a C++ loop (compiled at first use) calling a function on rotating argument sets, for timing |
| `sources` | generated sources (LLVM IR, asm, CUDA C, OpenCL C), the source postproc hook, nvcc |
| `rpc` | TVM RPC sessions, remote devices and VMs |
| `tuning` | MetaSchedule tuning (the tuned baseline) |
| `ms_tool` | MetaSchedule as a tool of the L1 agent: one PrimFunc, N trials, warm-started, in a child process; its trace as DSL steps |
| `tir_analysis` | FLOP estimates and per-block summaries for the profilers |
| `l0_passes` | the L0 graph passes, registered by name in `L0_PASSES` |
| `const_eval` | FoldConstant on a module holding a candidate's PrimFuncs runs in a confined child (`leka.core.confine`), its result back as JSON; `no_evaluation()`: builds fold nothing that runs |

`from leka import tvm_adapter as A` gives all of them (`A.make_target`, `A.lower`, ...). Recipes this
follows are in the shared `tvm-recipes/` folder (verified on TVM 0.27.0.post1 + apache-tvm-ffi 0.1.14.post1).
"""

from leka.tvm_adapter.call_loop import CallLoopUnavailable
from leka.tvm_adapter.errors import (
    ImportFailure,
    error_text,
    first_line,
)
from leka.tvm_adapter.importer import (
    IMPORTER_REVISION,
    PARSE_LOCK,
    bind_params,
    import_torch,
    lift_consts,
    load_relax,
    output_specs,
    param_names,
    parse_module,
    parse_tir,
    parseable_relax_text,
    relax_persisted,
    relax_text,
    unsupported_ops,
)
from leka.tvm_adapter.kernel_cache import build_with_kernel_cache, kernel_asm
from leka.tvm_adapter.l0_passes import (
    L0_PASS_FNS,
    L0_PASSES,
    L0Pass,
    l0_clip_to_relu_min,
    l0_combine_parallel_matmul,
    l0_conv1x1_to_matmul,
    l0_convert_layout_nhwc,
    l0_convert_layout_nhwc_hwio,
    l0_dead_code_elimination,
    l0_decompose_ops,
    l0_eliminate_common_subexpr,
    l0_fold_batchnorm,
    l0_fold_constant,
    l0_fuse,
    l0_fuse_transpose_matmul,
    l0_pow_to_multiply,
)
from leka.tvm_adapter.lowering import (
    buffer_signature,
    build,
    build_prim_func,
    count_relax_ops,
    export_library,
    extern_prim_func,
    gpu_default_schedule,
    is_scheduled,
    llvm_ir_to_object,
    load_module,
    lower,
    mark_scheduled,
    prim_funcs,
    relax_functions,
    replace_prim_func,
    schedule,
    structural_equal,
    structural_hash,
    tir_call_counts,
    tir_equivalent,
    unwrap_single_output,
)
from leka.tvm_adapter.ms_tool import (
    TuneResult,
    trace_steps,
    tune_prim_func,
)
from leka.tvm_adapter.rpc import (
    remote_device,
    remote_runner,
    remote_vm,
    rpc_connect,
    rpc_request,
    rpc_tracker_summary,
)
from leka.tvm_adapter.runtime import (
    L2Flusher,
    VMRunner,
    cuda_device_info,
    cuda_runtime_setup,
    device_free_bytes,
    device_sandbox_runner,
    flatten_outputs,
    planned_memory_bytes,
    run_prim_func,
    sandbox_runner,
    start_thread_pool,
    tensor_on,
    time_flushed,
)
from leka.tvm_adapter.sources import (
    find_module,
    inspect_source,
    nvcc_compile,
    runtime_source,
    source_postproc,
)
from leka.tvm_adapter.targets import (
    LLVM_OPTIONS,
    cpu_arch,
    cpu_target,
    device_for,
    is_gpu,
    make_target,
    max_threads_per_block,
    runs_here,
    target_json,
    tvm_version,
    vector_lanes_fp32,
    with_target_options,
)
from leka.tvm_adapter.tir_analysis import (
    estimate_tir_flops,
    sblock_summaries,
)
from leka.tvm_adapter.tuning import (
    apply_tuning_db,
    tune_relax,
    tuned_module,
    worker_initializer,
)

__all__ = ["CallLoopUnavailable", "build_with_kernel_cache", "kernel_asm", "IMPORTER_REVISION", "ImportFailure", "L0Pass", "L0_PASSES", "L0_PASS_FNS", "L2Flusher", "LLVM_OPTIONS", "PARSE_LOCK", "TuneResult", "VMRunner", "apply_tuning_db", "bind_params", "buffer_signature", "build", "build_prim_func", "count_relax_ops", "cpu_arch", "cpu_target", "cuda_device_info", "cuda_runtime_setup", "device_for", "device_free_bytes", "error_text", "estimate_tir_flops", "export_library", "extern_prim_func", "find_module", "first_line", "flatten_outputs", "gpu_default_schedule", "import_torch", "inspect_source", "is_gpu", "is_scheduled", "l0_clip_to_relu_min", "l0_combine_parallel_matmul", "l0_conv1x1_to_matmul", "l0_convert_layout_nhwc", "l0_convert_layout_nhwc_hwio", "l0_dead_code_elimination", "l0_decompose_ops", "l0_eliminate_common_subexpr", "l0_fold_batchnorm", "l0_fold_constant", "l0_fuse", "l0_fuse_transpose_matmul", "l0_pow_to_multiply", "lift_consts", "llvm_ir_to_object", "load_module", "load_relax", "lower", "make_target", "mark_scheduled", "max_threads_per_block", "nvcc_compile", "output_specs", "param_names", "parse_module", "parse_tir", "parseable_relax_text", "planned_memory_bytes", "prim_funcs", "relax_functions", "relax_persisted", "relax_text", "remote_device", "remote_runner", "remote_vm", "replace_prim_func", "rpc_connect", "rpc_request", "rpc_tracker_summary", "run_prim_func", "runs_here", "sandbox_runner", "device_sandbox_runner", "start_thread_pool", "runtime_source", "sblock_summaries", "schedule", "source_postproc", "structural_equal", "structural_hash", "target_json", "tensor_on", "time_flushed", "tir_call_counts", "tir_equivalent", "trace_steps", "tune_prim_func", "tune_relax", "tuned_module", "tvm_version", "unsupported_ops", "unwrap_single_output", "vector_lanes_fp32", "with_target_options", "worker_initializer"]
