// The process that forks `serve`'s pipeline workers. The server never loads a plugin and never
// forks: at start and at every reload it starts a zygote with posix_spawn (a fresh exec of this
// binary, `compactor serve-worker`), which loads the config and its plugins, builds the pipeline,
// says whether that worked, and then, single-threaded, forks one worker per request. A worker
// runs that request's stages in an address space no earlier request's stages ran in, answers on
// the job's socket (serve/job_protocol.hpp) and exits. Forking from a process that never starts
// a thread is what keeps a lock held by another thread from being held forever in a worker.
//
// The zygote dies with the server and its workers with the zygote (PR_SET_PDEATHSIG), so a
// `kill -9` of the server never leaves a process behind. When the server closes the control
// socket (a reload replaced the zygote, or the server drains), the zygote lets its workers finish
// and exits.
#pragma once

#include <string>

namespace compactor::serve {

// The zygote's main: `control_fd` is its end of the server's control socket; `parent` the
// server's pid (the zygote exits at once if it is no longer its parent). Returns the exit code.
int zygote_main(const std::string& config_file, int control_fd, int parent);

}  // namespace compactor::serve
