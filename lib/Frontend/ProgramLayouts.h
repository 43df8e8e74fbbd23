//===- ProgramLayouts.h - blocked layouts inside compiled programs (internal) -===//
#ifndef DLC_LIB_FRONTEND_PROGRAMLAYOUTS_H
#define DLC_LIB_FRONTEND_PROGRAMLAYOUTS_H

#include "dlc/Runtime/Program.h"
#include "dlc/Runtime/ShardedProgram.h"

namespace dlc::detail {

/// Whether programs compiled now get blocked layouts: the eager switch is on and the
/// reference kernels (which read plain tensors only) are off. Part of the compile caches'
/// keys, so that a program runs under the setting it was compiled for.
bool compiled_layouts_enabled();

/// Plans blocked layouts in a lowered, planned program (ProgramLayouts.cpp) and plans its
/// memory again; returns whether any value is blocked. Does nothing when
/// compiled_layouts_enabled() is false. `argument_layouts` (one per argument, or empty:
/// all plain) are the layouts the caller will bind the arguments in; with
/// `blocked_results`, results may be written blocked (the caller reads each result's
/// layout from its value). A sharded program keeps its arguments and results plain.
bool assign_program_layouts(Program &program, const std::vector<Layout> &argument_layouts = {},
                            bool blocked_results = false);
bool assign_program_layouts(ShardedProgram &program);

} // namespace dlc::detail

#endif // DLC_LIB_FRONTEND_PROGRAMLAYOUTS_H
