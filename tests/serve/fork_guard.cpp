// TEST ONLY, preloaded (LD_PRELOAD) into `compactor serve`: records every fork() made by a
// process that has more than one thread at that moment, the hazard the server's design rules
// out (a lock another thread holds is held forever in the child). posix_spawn does not call
// fork(). The log is the file COMPACTOR_FORK_GUARD_LOG names; each process that loads the guard
// writes a "loaded" line first, so a test knows it was in force.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int threads() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int n = -1;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::strncmp(line, "Threads:", 8) == 0) n = std::atoi(line + 8);
  std::fclose(f);
  return n;
}

void note(const char* what, int value) {
  const char* path = std::getenv("COMPACTOR_FORK_GUARD_LOG");
  if (path == nullptr) return;
  int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char line[128];
  int n = std::snprintf(line, sizeof line, "%s pid %d: %d\n", what, static_cast<int>(::getpid()), value);
  if (n > 0) (void)!::write(fd, line, static_cast<std::size_t>(n));
  ::close(fd);
}

__attribute__((constructor)) void loaded() { note("loaded", threads()); }

}  // namespace

extern "C" pid_t fork() {
  using Fork = pid_t (*)();
  static Fork real = reinterpret_cast<Fork>(::dlsym(RTLD_NEXT, "fork"));
  if (int n = threads(); n != 1) note("forked with threads", n);
  return real();
}
