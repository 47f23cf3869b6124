// What one `compactor run` process cannot go below in this architecture, for the one-shot benchmark
// (tools/bench/one_shot.py): a C++ process that dlopens six C++ plugins (RTLD_NOW, as the loader
// does), forks the run's child (the isolation that keeps a crashing plugin from taking the host
// down), and in the child reads the input (fstat + read) and writes it to the output atomically (a
// temporary file, fsync, rename); the parent waits. No config, no import, no stages, no checkers,
// no archive.
//
// usage: compactor_bench_process_floor PLUGIN_DIR INPUT OUTPUT
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

bool write_atomically(const std::string& path, const std::string& bytes) {
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) return false;
  bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (ok) ok = ::rename(temp.c_str(), path.c_str()) == 0;
  if (!ok) ::unlink(temp.c_str());
  return ok;
}

int copy(const std::string& input, const std::string& output) {
  int fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) return 2;
  std::string bytes(static_cast<std::size_t>(st.st_size), '\0');
  ssize_t n = ::read(fd, bytes.data(), bytes.size());
  ::close(fd);
  if (n != static_cast<ssize_t>(bytes.size())) return 2;
  return write_atomically(output, bytes) ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: compactor_bench_process_floor PLUGIN_DIR INPUT OUTPUT\n");
    return 2;
  }
  const std::string dir = argv[1];
  int sum = 0;
  for (int i = 1; i <= 6; ++i) {
    std::string file = dir + "/compactor_bench_floor_plugin_" + std::to_string(i) + ".so";
    void* library = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    auto* entry = library == nullptr ? nullptr : reinterpret_cast<int (*)(int)>(::dlsym(library, "floor_plugin_entry"));
    if (entry == nullptr) {
      std::fprintf(stderr, "compactor_bench_process_floor: %s\n", ::dlerror());
      return 3;
    }
    sum += entry(i);
  }
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return 3;
  if (pid == 0) ::_exit(copy(argv[2], argv[3]));
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 3;
  return sum > 0 ? WEXITSTATUS(status) : 3;
}
