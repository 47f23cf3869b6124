// A shared library opened by name when a command first needs it, instead of linked: every linked
// library costs every process its load at start (milliseconds each), whether the command uses it or not.
// `serve` opens libcurl this way, Claude's legacy meter ICU. Kept open until the process ends.
#pragma once

#include <dlfcn.h>

#include <string>

namespace compactor {

class LibraryOnDemand {
 public:
  explicit LibraryOnDemand(std::string soname) : soname_(std::move(soname)), handle_(::dlopen(soname_.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (handle_ == nullptr) {
      const char* e = ::dlerror();
      why_ = "cannot open " + soname_ + ": " + (e != nullptr ? e : "unknown error");
    }
  }

  // Points `fn` at the library's function `name`; false, with why() saying so, when the library
  // or the function is missing (why() keeps the first failure).
  template <class Function>
  bool get(Function*& fn, const char* name) {
    fn = handle_ != nullptr ? reinterpret_cast<Function*>(::dlsym(handle_, name)) : nullptr;
    if (fn == nullptr && why_.empty()) why_ = soname_ + " has no function " + name;
    return fn != nullptr;
  }

  const std::string& why() const { return why_; }

 private:
  std::string soname_;
  void* handle_;
  std::string why_;
};

}  // namespace compactor
