# lit configuration of the dlc test suite.
import os
import sys

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "DLC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dlc_obj_root, "test")

config.substitutions.append(("%dlc_src_root", config.dlc_src_root))
config.substitutions.append(("%dlc_obj_root", config.dlc_obj_root))
config.substitutions.append(("%cmake", config.cmake_command))
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

if config.dlc_have_cuda:
    config.available_features.add("cuda")
# A build with sanitizers (scripts/sanitize.sh): AddressSanitizer handles SIGSEGV itself.
if config.dlc_sanitize:
    config.available_features.add("sanitizers")
# What a program built outside this build (examples/embed) needs to link a sanitized libdlc.
config.substitutions.append(
    ("%dlc_sanitize_flags", "-fsanitize=" + config.dlc_sanitize if config.dlc_sanitize else ""))

# ptxas (the CUDA toolkit's) assembles the PTX that code generation emits; the toolkit's
# libdevice is what that PTX's math functions link.
import shutil
ptxas = shutil.which("ptxas") or shutil.which("ptxas", path="/usr/local/cuda/bin")
if ptxas:
    config.available_features.add("ptxas")
    llvm_config.with_environment("PATH", os.path.dirname(ptxas), append_path=True)
config.substitutions.append(("%python", sys.executable))

# A build with MPI (cmake/DLCFindMPI.cmake): jobs of several processes on this machine.
# Root may launch them (CI runs as root), more processes than cores are allowed, and no
# process is pinned to a core (two processes of a 2-core machine would share one).
if config.dlc_mpiexec:
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", config.dlc_mpiexec + " --allow-run-as-root --oversubscribe --bind-to none"
         " --mca btl_vader_single_copy_mechanism none -np"))

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.dlc_tools_dir, config.llvm_tools_dir]
# mlir-opt is upstream's (mlir-19-tools): what dlc-opt emits for code generation must be
# plain MLIR that it accepts.
tools = ["dlc-opt", "dlc-info", "dlc-train", "dlc-run", "dlc-compile", "dlc-example-devices", "dlc-example-leafnet", "dlc-example-c-api", ToolSubst("FileCheck", unresolved="fatal"), ToolSubst("mlir-opt", unresolved="fatal"), "not", "count"]
if config.dlc_have_cuda:
    # The same programs on emulated GPUs (unittests/GPU/Emulator).
    tools += ["dlc-train-emulated", "dlc-example-devices-emulated"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
