#include "loader/plugin_loader.hpp"

#include "checkers/checker_host.hpp"

#include "loader/builtins.hpp"
#include "loader/plugin_discovery.hpp"

#include <boost/dll/shared_library.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elf.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <set>
#include <sstream>
#include <type_traits>

namespace compactor {
namespace {

namespace fs = std::filesystem;

// "libstdcxx12__abi1__…__spdlog1_10_0__…" → "libstdcxx12-abi1-…-spdlog1.10.0-…"
std::string fingerprint_from_symbol(std::string_view part) {
  std::string out;
  for (std::size_t i = 0; i < part.size(); ++i) {
    if (part[i] == '_' && i + 1 < part.size() && part[i + 1] == '_') {
      out += '-';
      ++i;
    } else {
      out += part[i] == '_' ? '.' : part[i];
    }
  }
  return out;
}

// The leading letters of each component that differs: "boost", "asan"…
std::string differing_components(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= s.size(); ++i)
      if (i == s.size() || s[i] == '-') {
        parts.push_back(s.substr(start, i - start));
        start = i + 1;
      }
    return parts;
  };
  auto pa = split(a), pb = split(b);
  std::string out;
  for (std::size_t i = 0; i < std::max(pa.size(), pb.size()); ++i) {
    std::string x = i < pa.size() ? pa[i] : "", y = i < pb.size() ? pb[i] : "";
    if (x == y) continue;
    std::string name = x.substr(0, x.find_first_of("0123456789"));
    if (name == "libstdcxx" || name == "libcxx") name = "standard library (libstdcxx is libstdc++, libcxx libc++)";
    else if (name == "abi") name = "string ABI (_GLIBCXX_USE_CXX11_ABI)";
    else if (name == "debug") name = "debug mode (_GLIBCXX_DEBUG)";
    if (!out.empty()) out += ", ";
    out += name.empty() ? "?" : name;
  }
  return out;
}

std::string describe_exception(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

class CollectingRegistrar final : public PluginRegistrar {
 public:
  void add_stage(StageInfo stage) override { stages.push_back(std::move(stage)); }
  void add_summarizer(SummarizerInfo s) override { summarizers.push_back(std::move(s)); }
  void add_checker(CheckerInfo c) override { checkers.push_back(std::move(c)); }
  std::vector<StageInfo> stages;
  std::vector<SummarizerInfo> summarizers;
  std::vector<CheckerInfo> checkers;
};

// A plugin checker's every call caught: an exception is a violation naming it, so the candidate
// is rejected (a rule that could not be evaluated has not passed).
class GuardedChecker final : public Checker {
 public:
  GuardedChecker(CheckerPtr inner, std::string name, std::string who)
      : inner_(std::move(inner)), rule_(std::move(name)), who_(std::move(who)) {}
  void check(const CheckInput& input, std::vector<Violation>& out) const override {
    try {
      std::vector<Violation> found;
      inner_->check(input, found);
      for (Violation& v : found) {
        v.checker = rule_;  // reported under the name the config enabled
        out.push_back(std::move(v));
      }
    } catch (...) {
      Violation v;
      v.checker = rule_;
      v.what = who_ + " threw: " + describe_exception(std::current_exception());
      out.push_back(std::move(v));
    }
  }

 private:
  CheckerPtr inner_;
  std::string rule_, who_;
};

// Every call into a backend's code is caught here and becomes an Error naming it.
class GuardedSummarizer final : public Summarizer {
 public:
  GuardedSummarizer(std::unique_ptr<Summarizer> inner, std::string who) : inner_(std::move(inner)), who_(std::move(who)) {}
  Expected<Summary> summarize(const SummaryRequest& request) override {
    try {
      auto s = inner_->summarize(request);
      if (!s) return Error{who_ + ": " + s.error().message};
      return s;
    } catch (...) {
      return Error{who_ + " threw: " + describe_exception(std::current_exception())};
    }
  }
  std::vector<SummarizerCall> take_calls() override {
    try {
      return inner_->take_calls();
    } catch (...) {
      return {};  // accounting is best effort; the summary itself was already validated
    }
  }

 private:
  std::unique_ptr<Summarizer> inner_;
  std::string who_;
};

#if defined(__x86_64__)
constexpr std::uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr std::uint16_t kHostMachine = EM_AARCH64;
#else
#error "the plugin pre-load check knows x86-64 and AArch64 hosts"
#endif

std::string machine_name(std::uint16_t machine) {
  switch (machine) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "AArch64";
    case EM_386: return "i386";
    case EM_ARM: return "ARM";
    case EM_RISCV: return "RISC-V";
    case EM_PPC64: return "PowerPC 64";
    case EM_S390: return "s390";
    default: return "ELF machine " + std::to_string(machine);
  }
}

// What the loader reads of a plugin file before loading it, from one open: why it cannot be this
// host's shared library, or its exported entry symbols and the bytes of its info symbol. Read by
// hand rather than with boost::dll::library_info, which reads the whole .symtab (thousands of
// local symbols in a build with debug information) into strings, a third read of the file.
struct ElfExports {
  std::optional<std::string> refusal;
  std::vector<std::string> entries;  // exported names starting with kEntrySymbolPrefix
  std::optional<std::string> info;   // the bytes of compactor_plugin_info, when it is exported
};

// Every header and section must lie inside the file (Boost.DLL allocated what a corrupt
// 1.4 MB file's section headers claimed, 6 GB), and a library for another machine is said to be
// one, not reported as a missing file by dlopen.
ElfExports read_elf_exports(const std::string& file) {
  ElfExports out;
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  } f{::open(file.c_str(), O_RDONLY | O_CLOEXEC)};
  struct stat st {};
  const std::uint64_t size = f.fd >= 0 && ::fstat(f.fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  auto read_at = [&](void* to, std::uint64_t offset, std::uint64_t length) {
    if (offset > size || length > size - offset) return false;
    auto* p = static_cast<char*>(to);
    for (std::uint64_t done = 0; done < length;) {
      ssize_t n = ::pread(f.fd, p + done, length - done, static_cast<off_t>(offset + done));
      if (n <= 0) return false;
      done += static_cast<std::uint64_t>(n);
    }
    return true;
  };
  Elf64_Ehdr header{};
  if (size < 4 || !read_at(&header, 0, 4) || std::string_view(reinterpret_cast<const char*>(header.e_ident), 4) != "\x7f" "ELF") {
    out.refusal = "not a shared library (no ELF header)";
    return out;
  }
  if (!read_at(&header, 0, sizeof header)) {
    out.refusal = "not a shared library (truncated ELF header)";
    return out;
  }
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != ELFDATA2LSB || header.e_machine != kHostMachine) {
    out.refusal = "built for another architecture (" +
                  (header.e_ident[EI_CLASS] == ELFCLASS64 ? machine_name(header.e_machine) : std::string("32-bit ELF")) +
                  "); this host is " + machine_name(kHostMachine) + " 64-bit";
    return out;
  }
  if (header.e_type != ET_DYN) {
    out.refusal = "not a shared library (ELF type " + std::to_string(header.e_type) + ")";
    return out;
  }
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  if (header.e_shentsize != sizeof(Elf64_Shdr) || !read_at(sections.data(), header.e_shoff, sections.size() * sizeof(Elf64_Shdr))) {
    out.refusal = "corrupt ELF file (section headers outside its " + std::to_string(size) + " bytes)";
    return out;
  }
  for (std::size_t i = 0; i < sections.size(); ++i)
    if (sections[i].sh_type != SHT_NOBITS && (sections[i].sh_offset > size || sections[i].sh_size > size - sections[i].sh_offset)) {
      out.refusal = "corrupt ELF file (section " + std::to_string(i) + " outside its " + std::to_string(size) + " bytes)";
      return out;
    }
  for (const Elf64_Shdr& symtab : sections) {
    if (symtab.sh_type != SHT_DYNSYM || symtab.sh_link >= sections.size()) continue;
    std::vector<Elf64_Sym> symbols(symtab.sh_size / sizeof(Elf64_Sym));
    std::string names(sections[symtab.sh_link].sh_size, '\0');
    if (!read_at(symbols.data(), symtab.sh_offset, symbols.size() * sizeof(Elf64_Sym)) ||
        !read_at(names.data(), sections[symtab.sh_link].sh_offset, names.size()))
      return out;
    names.push_back('\0');  // a name running off the table's end stops there
    for (const Elf64_Sym& sym : symbols) {
      // Exported: defined, global or weak, default or protected visibility (what dlsym finds).
      const unsigned visibility = sym.st_other & 0x03;
      if (sym.st_name >= names.size() || sym.st_shndx == SHN_UNDEF || ELF64_ST_BIND(sym.st_info) == STB_LOCAL ||
          (visibility != STV_DEFAULT && visibility != STV_PROTECTED))
        continue;
      std::string_view name(names.c_str() + sym.st_name);
      if (name.rfind(kEntrySymbolPrefix, 0) == 0) out.entries.emplace_back(name);
      if (name != "compactor_plugin_info" || sym.st_shndx >= sections.size() || sym.st_size > 4096) continue;
      const Elf64_Shdr& where = sections[sym.st_shndx];
      if (where.sh_type == SHT_NOBITS || sym.st_value < where.sh_addr || sym.st_value - where.sh_addr > where.sh_size) continue;
      std::string bytes(sym.st_size, '\0');
      if (read_at(bytes.data(), where.sh_offset + (sym.st_value - where.sh_addr), bytes.size())) out.info = std::move(bytes);
    }
  }
  return out;
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// Why a plugin file may have been planted: it, or the folder holding it, can be written by every
// user (a folder with the sticky bit only lets them add files, which the owner check catches), or
// belongs to a user who is neither this one nor root. Loading it would run that user's code as
// the caller. COMPACTOR_TRUST_PLUGINS=1 loads such files anyway.
std::optional<std::string> ownership_refusal(const std::string& file) {
  if (const char* trust = std::getenv(kTrustPluginsVariable); trust != nullptr && std::string_view(trust) == "1")
    return std::nullopt;
  std::error_code ec;
  fs::path real = fs::canonical(file, ec);
  if (ec) return std::nullopt;  // the ELF check reports what is wrong with it
  const std::string override_hint = std::string("; fix that, or set ") + kTrustPluginsVariable + "=1 to load it anyway";
  uid_t me = ::geteuid();
  for (const fs::path& p : {real, real.parent_path()}) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) continue;
    bool folder = S_ISDIR(st.st_mode);
    std::string what = folder ? "its folder " + p.string() : std::string("it");
    if ((st.st_mode & S_IWOTH) && !(folder && (st.st_mode & S_ISVTX)))
      return what + " can be written by every user (mode " + octal_mode(st.st_mode) + "), so anyone could have planted it" +
             override_hint;
    if (st.st_uid != me && st.st_uid != 0)
      return what + " belongs to another user (uid " + std::to_string(st.st_uid) + "; this is uid " + std::to_string(me) +
             "), who could have planted it" + override_hint;
  }
  return std::nullopt;
}

}  // namespace

PluginProbe probe_plugin(const std::string& file) {
  PluginProbe probe;
  probe.file = file;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) {
    probe.refusal = file + ": no such plugin file";
    return probe;
  }
  if (auto why = ownership_refusal(file)) {
    probe.refusal = file + ": refused: " + *why;
    return probe;
  }
  ElfExports exports = read_elf_exports(file);
  if (exports.refusal) {
    probe.refusal = file + ": " + *exports.refusal;
    return probe;
  }
  const std::vector<std::string>& entries = exports.entries;
  if (entries.empty()) {
    probe.refusal = file + ": no Compactor plugin entry point (no exported " + kEntrySymbolPrefix +
                    "… symbol; build it with compactor_add_stage and COMPACTOR_PLUGIN)";
    return probe;
  }
  if (entries.size() > 1) {
    probe.refusal = file + ": more than one Compactor plugin entry point (" + entries[0] + ", " + entries[1] + ")";
    return probe;
  }
  std::string_view rest = std::string_view(entries[0]).substr(std::string_view(kEntrySymbolPrefix).size());
  std::size_t sep = rest.find("__");
  try {
    probe.api_version = std::stoi(std::string(rest.substr(0, sep)));
  } catch (const std::exception&) {
    probe.refusal = file + ": malformed Compactor entry point " + entries[0];
    return probe;
  }
  probe.fingerprint = sep == std::string_view::npos ? "" : fingerprint_from_symbol(rest.substr(sep + 2));
  if (probe.api_version != kApiVersion) {
    probe.refusal = file + ": plugin API version " + std::to_string(probe.api_version) +
                    ", but this host implements version " + std::to_string(kApiVersion) +
                    "; rebuild the plugin against this Compactor";
    return probe;
  }
  if (const auto& info = exports.info) {
    std::size_t nul = info->find('\0');
    probe.name = info->substr(0, nul);
    if (nul != std::string::npos) {
      std::size_t nul2 = info->find('\0', nul + 1);
      probe.version = info->substr(nul + 1, nul2 - nul - 1);
      if (nul2 != std::string::npos) {
        std::size_t nul3 = info->find('\0', nul2 + 1);
        probe.compiler = info->substr(nul2 + 1, nul3 - nul2 - 1);
        if (nul3 != std::string::npos) {
          std::istringstream names(info->substr(nul3 + 1, info->find('\0', nul3 + 1) - nul3 - 1));
          for (std::string n; names >> n;) probe.provides.push_back(n);
        }
      }
    }
  }
  if (probe.fingerprint != kBuildFingerprint) {
    probe.refusal = file + ": built " + (probe.compiler.empty() ? "" : "with " + probe.compiler + " ") + "for " +
                    probe.fingerprint + ", but this host is " + kBuildFingerprint + " (differs in: " +
                    differing_components(probe.fingerprint, kBuildFingerprint) +
                    "); rebuild the plugin against the host's standard library and libraries, with the same flags";
    return probe;
  }
  probe.loadable = true;
  return probe;
}

namespace {

template <class Info>
constexpr std::string_view kind_of() {
  if constexpr (std::is_same_v<Info, StageInfo>) return "stage";
  else if constexpr (std::is_same_v<Info, SummarizerInfo>) return "summarizer";
  else return "checker";
}

// Boost.DLL clears dlerror(); a second dlopen of a file that just failed to load fails the same
// way, before any of its code runs, and tells why.
std::optional<Error> open_library(boost::dll::shared_library& library, const std::string& file, const std::string& real) {
  boost::dll::fs::error_code ec;
  library.load(real, boost::dll::load_mode::rtld_local | boost::dll::load_mode::rtld_now, ec);
  if (!ec) return std::nullopt;
  std::string why = ec.message();
  dlerror();
  if (void* h = dlopen(real.c_str(), RTLD_NOW | RTLD_LOCAL); h == nullptr) {
    if (const char* e = dlerror()) why = e;
  }
  return Error{file + ": cannot load: " + why};
}

// The descriptor the entry point returns, checked against what its symbol said.
Expected<const compactor_plugin_descriptor*> read_descriptor(boost::dll::shared_library& library, const std::string& file) {
  const compactor_plugin_descriptor* descriptor = nullptr;
  try {
    auto entry = library.get<const compactor_plugin_descriptor*()>(COMPACTOR_ENTRY_SYMBOL_NAME);
    descriptor = entry();
  } catch (...) {
    return Error{file + ": the plugin entry point threw: " + describe_exception(std::current_exception())};
  }
  if (descriptor == nullptr) return Error{file + ": bad plugin descriptor: the entry point returned null"};
  if (descriptor->api_version != kApiVersion || descriptor->fingerprint == nullptr ||
      std::string_view(descriptor->fingerprint) != kBuildFingerprint)
    return Error{file + ": bad plugin descriptor: its API version or fingerprint disagrees with its entry symbol"};
  if (descriptor->name == nullptr || *descriptor->name == '\0' || descriptor->version == nullptr ||
      descriptor->register_plugin == nullptr)
    return Error{file + ": bad plugin descriptor: name, version and register callback are required"};
  return descriptor;
}

// Why one kind of what a plugin registered cannot be: no name or factory, twice, a built-in
// checker's name, or the name of one another file registered.
template <class Info>
std::optional<std::string> refusal_of(const std::vector<Info>& entries, const std::map<std::string, Registered<Info>>& known,
                                      const std::string& file, const std::string& real, const std::string& plugin) {
  const std::string kind(kind_of<Info>());
  std::set<std::string> names;
  for (const Info& e : entries) {
    if (e.name.empty() || !e.create) return file + ": plugin " + plugin + " registered a " + kind + " without a name or factory";
    if constexpr (std::is_same_v<Info, CheckerInfo>)
      if (PluginRegistry::instance().builtin_checker(e.name) != nullptr)
        return file + ": plugin " + plugin + " registers checker \"" + e.name + "\", the name of a built-in checker";
    if (!names.insert(e.name).second) return file + ": plugin " + plugin + " registers " + kind + " \"" + e.name + "\" twice";
    if (auto it = known.find(e.name); it != known.end())
      return kind + " \"" + e.name + "\" is registered by both " + it->second.file() + " and " + real;
  }
  return std::nullopt;
}

// What a plugin registers must be what its file declares (the names the host reads without loading).
std::optional<std::string> undeclared(const PluginProbe& probe, const CollectingRegistrar& registrar, const std::string& file,
                                      const std::string& plugin) {
  if (probe.provides.empty()) return std::nullopt;
  std::set<std::string> declared(probe.provides.begin(), probe.provides.end()), registered;
  for (const StageInfo& s : registrar.stages) registered.insert("stage:" + s.name);
  for (const SummarizerInfo& s : registrar.summarizers) registered.insert("summarizer:" + s.name);
  for (const CheckerInfo& c : registrar.checkers) registered.insert("checker:" + c.name);
  if (declared == registered) return std::nullopt;
  auto joined = [](const std::set<std::string>& set) {
    std::string out;
    for (const auto& n : set) out += (out.empty() ? "" : " ") + n;
    return out.empty() ? std::string("nothing") : out;
  };
  return file + ": plugin " + plugin + " declares \"" + joined(declared) + "\" in COMPACTOR_PLUGIN but registers \"" +
         joined(registered) + "\"";
}

}  // namespace

struct PluginRegistry::Library {
  boost::dll::shared_library library;
  LoadedPlugin plugin;
  std::optional<Error> failure;  // a library that failed after loading stays loaded, and failed
};

PluginRegistry& PluginRegistry::instance() {
  // Deliberately never destroyed: plugin code must stay mapped until the process ends.
  static PluginRegistry* registry = [] {
    auto* r = new PluginRegistry();
    register_builtins(*r);
    return r;
  }();
  return *registry;
}

Expected<const LoadedPlugin*> PluginRegistry::load(const std::string& file) {
  PluginProbe probe = probe_plugin(file);
  if (!probe.loadable) return Error{probe.refusal};
  std::string real = fs::canonical(file).string();
  if (auto it = libraries_.find(real); it != libraries_.end()) {
    if (it->second->failure) return *it->second->failure;
    return &it->second->plugin;
  }
  auto lib = std::make_unique<Library>();
  lib->plugin.file = real;
  if (auto e = open_library(lib->library, file, real)) return *e;

  Library& l = *libraries_.emplace(real, std::move(lib)).first->second;
  auto fail = [&](std::string message) -> Error {
    l.failure = Error{std::move(message)};
    return *l.failure;
  };
  auto descriptor = read_descriptor(l.library, file);
  if (!descriptor) return fail(descriptor.error().message);
  l.plugin.name = (*descriptor)->name;
  l.plugin.version = (*descriptor)->version;
  l.plugin.api_version = (*descriptor)->api_version;

  CollectingRegistrar registrar;
  try {
    (*descriptor)->register_plugin(registrar);
  } catch (...) {
    return fail(file + ": registering plugin " + l.plugin.name + " threw: " + describe_exception(std::current_exception()));
  }
  if (registrar.stages.empty() && registrar.summarizers.empty() && registrar.checkers.empty())
    return fail(file + ": plugin " + l.plugin.name + " registered no stage, no summarizer and no checker");
  auto& [stages, summarizers, checkers] = shelves_;
  if (auto why = refusal_of(registrar.checkers, checkers.by_name, file, real, l.plugin.name)) return fail(*why);
  if (auto why = refusal_of(registrar.summarizers, summarizers.by_name, file, real, l.plugin.name)) return fail(*why);
  if (auto why = refusal_of(registrar.stages, stages.by_name, file, real, l.plugin.name)) return fail(*why);
  if (auto why = undeclared(probe, registrar, file, l.plugin.name)) return fail(*why);
  for (StageInfo& s : registrar.stages) l.plugin.stages.push_back(stages.put(std::move(s), &l.plugin)->info->name);
  for (SummarizerInfo& s : registrar.summarizers) l.plugin.summarizers.push_back(summarizers.put(std::move(s), &l.plugin)->info->name);
  for (CheckerInfo& c : registrar.checkers) l.plugin.checkers.push_back(checkers.put(std::move(c), &l.plugin)->info->name);
  return &l.plugin;
}

Expected<const LoadedPlugin*> PluginRegistry::load_for(const std::string& file, std::string_view kind, const std::string& name) {
  PluginProbe probe = probe_plugin(file);
  if (!probe.loadable) return Error{probe.refusal};
  if (!probe.provides.empty() && !probe.provides_named(kind, name)) {
    std::string declared;
    for (const std::string& p : probe.provides) declared += (declared.empty() ? "" : " ") + p;
    return Error{file + ": plugin " + probe.name + " declares \"" + declared + "\", not " + std::string(kind) + ":" + name +
                 "; refused before loading it (none of its code ran)"};
  }
  return load(file);
}

template <class Info>
Expected<const Registered<Info>*> PluginRegistry::add_builtin(Info info) {
  if constexpr (std::is_same_v<Info, CheckerInfo>)
    if (builtin_checker(info.name) != nullptr) return Error{"checker \"" + info.name + "\" is the name of a built-in checker"};
  Shelf<Info>& shelf = std::get<Shelf<Info>>(shelves_);
  if (auto it = shelf.by_name.find(info.name); it != shelf.by_name.end() && it->second.plugin != nullptr)
    return Error{std::string(kind_of<Info>()) + " \"" + info.name + "\" is registered by both " + it->second.file() + " and <built-in>"};
  return shelf.put(std::move(info), nullptr);
}
Expected<const RegisteredChecker*> PluginRegistry::add_builtin(CheckerInfo info, CheckerTraits traits) {
  Shelf<CheckerInfo>& shelf = std::get<Shelf<CheckerInfo>>(shelves_);
  if (auto it = shelf.by_name.find(info.name); it != shelf.by_name.end() && it->second.plugin != nullptr)
    return Error{"checker \"" + info.name + "\" is registered by both " + it->second.file() + " and <built-in>"};
  const RegisteredChecker* entry = shelf.put(std::move(info), nullptr);
  auto same = std::find_if(builtin_checkers_.begin(), builtin_checkers_.end(), [&](const BuiltinChecker& b) { return b.name() == entry->info->name; });
  if (same != builtin_checkers_.end()) *same = BuiltinChecker{entry, traits};
  else builtin_checkers_.push_back(BuiltinChecker{entry, traits});
  return entry;
}

const BuiltinChecker* PluginRegistry::builtin_checker(std::string_view name) const {
  for (const BuiltinChecker& b : builtin_checkers_)
    if (b.name() == name) return &b;
  return nullptr;
}

CheckerPtr BuiltinChecker::make() const {
  auto made = PluginRegistry::make_checker(*entry, {});
  return made ? std::move(made).value() : nullptr;
}

template Expected<const RegisteredStage*> PluginRegistry::add_builtin(StageInfo);
template Expected<const RegisteredSummarizer*> PluginRegistry::add_builtin(SummarizerInfo);
template Expected<const RegisteredChecker*> PluginRegistry::add_builtin(CheckerInfo);

Expected<std::unique_ptr<Checker>> PluginRegistry::make_checker(const RegisteredChecker& checker, const ParamValues& params) {
  auto created = checker.info->create(params);
  if (!created) return created;
  return CheckerHost::named(std::move(created).value(), checker.info->name);
}

Expected<CheckerPtr> create_guarded_checker(const RegisteredChecker& checker, const ParamValues& params, bool* refused) {
  std::string who = "checker " + checker.info->name + " (" + checker.file() + ")";
  try {
    auto created = PluginRegistry::make_checker(checker, params);
    if (refused != nullptr) *refused = !created;
    if (!created) return Error{who + ": " + created.error().message};
    if (created.value() == nullptr) return Error{who + ": the factory returned nothing"};
    return CheckerPtr(CheckerHost::named(std::make_unique<GuardedChecker>(CheckerPtr(std::move(created).value()), checker.info->name, who),
                                         checker.info->name));
  } catch (...) {
    return Error{who + ": create threw: " + describe_exception(std::current_exception())};
  }
}

Expected<std::unique_ptr<Summarizer>> create_guarded_summarizer(const RegisteredSummarizer& summarizer,
                                                                const ParamValues& params, bool* refused) {
  std::string who = "summarizer " + summarizer.info->name + " (" + summarizer.file() + ")";
  try {
    auto created = summarizer.info->create(params);
    if (refused != nullptr) *refused = !created;
    if (!created) return Error{who + ": " + created.error().message};
    if (created.value() == nullptr) return Error{who + ": the factory returned nothing"};
    return std::unique_ptr<Summarizer>(std::make_unique<GuardedSummarizer>(std::move(created).value(), who));
  } catch (...) {
    return Error{who + ": create threw: " + describe_exception(std::current_exception())};
  }
}

Expected<std::unique_ptr<Stage>> create_stage(const RegisteredStage& stage, const ParamValues& params, bool* refused) {
  std::string who = "stage " + stage.info->name + " (" + stage.file() + ")";
  try {
    auto created = stage.info->create(params);
    if (refused != nullptr) *refused = !created;
    if (!created) return Error{who + ": " + created.error().message};
    if (created.value() == nullptr) return Error{who + ": the factory returned no stage"};
    return std::move(created).value();
  } catch (...) {
    return Error{who + ": create threw: " + describe_exception(std::current_exception())};
  }
}

Expected<StageResult> run_stage(Stage& instance, const RegisteredStage& stage, const Conversation& committed,
                                const StageContext& context) {
  try {
    return instance.run(committed, context);
  } catch (...) {
    return Error{"stage " + stage.info->name + " (" + stage.file() + "): run threw: " +
                 describe_exception(std::current_exception())};
  }
}

bool PluginProbe::provides_named(std::string_view kind, std::string_view wanted) const {
  for (const std::string& p : provides)
    if (p.size() == kind.size() + 1 + wanted.size() && p.compare(0, kind.size(), kind) == 0 && p[kind.size()] == ':' &&
        p.compare(kind.size() + 1, wanted.size(), wanted) == 0)
      return true;
  return false;
}

std::optional<std::string> find_provider(std::string_view kind, const std::string& name, const std::vector<std::string>& dirs) {
  std::string file_name = kind == "summarizer" ? summarizer_file_name(name)
                          : kind == "checker"  ? checker_file_name(name)
                                               : stage_file_name(name);
  if (auto named = find_plugin_file(file_name, dirs)) return named;
  for (const std::string& file : list_plugin_files(dirs, "compactor_"))
    if (probe_plugin(file).provides_named(kind, name)) return file;
  return std::nullopt;
}

}  // namespace compactor
