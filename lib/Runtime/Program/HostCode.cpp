//===- HostCode.cpp - link generated objects at write, open them from memory --===//
#include "dlc/Runtime/Program/HostCode.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace dlc {

namespace {

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  return bool(out.flush());
}

/// A directory of its own under $TMPDIR (or /tmp), removed with what it holds.
struct ScratchDirectory {
  std::string path;
  std::vector<std::string> files;
  explicit ScratchDirectory(std::string &error) {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dlc-link-XXXXXX";
    if (mkdtemp(pattern.data()))
      path = pattern;
    else
      error = "cannot create a directory to link in (" + pattern + "): " + std::strerror(errno);
  }
  std::string file(const std::string &name) {
    files.push_back(path + "/" + name);
    return files.back();
  }
  ~ScratchDirectory() {
    for (const std::string &f : files)
      std::remove(f.c_str());
    if (!path.empty())
      rmdir(path.c_str());
  }
};

/// Runs `argv` with its output to `log`; its exit status, or -1 when it did not start.
int run(const std::vector<std::string> &argv, const std::string &log) {
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid;
  int started = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (started != 0)
    return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

} // namespace

const GeneratedKernel *host_entry_of(const FusedElementwise &region) {
  if (region.generated)
    return region.generated.get();
  return region.gpu ? region.gpu->host_build.get() : nullptr;
}

std::vector<std::shared_ptr<const HostObject>> host_objects_of(const Program &program) {
  std::vector<std::shared_ptr<const HostObject>> objects;
  std::set<const HostObject *> seen;
  for (const ProgramStep &step : program.steps)
    if (const GeneratedKernel *code = step.fused ? host_entry_of(*step.fused) : nullptr)
      if (code->object && seen.insert(code->object.get()).second)
        objects.push_back(code->object);
  return objects;
}

std::string link_host_objects(const std::vector<std::shared_ptr<const HostObject>> &objects,
                              std::string &error) {
  error.clear();
  for (const auto &object : objects)
    if (object->target != objects.front()->target) {
      error = "the objects were generated for different targets (" +
              objects.front()->target + "; " + object->target + ")";
      return "";
    }
  ScratchDirectory scratch(error);
  if (!error.empty())
    return "";
  const char *linker = std::getenv("DLC_LINKER");
  std::vector<std::string> argv = {linker && *linker ? linker : "cc", "-shared", "-o",
                                   scratch.file("host_code.so")};
  for (size_t i = 0; i < objects.size(); ++i) {
    std::string path = scratch.file("kernels" + std::to_string(i) + ".o");
    if (!writeFile(path, objects[i]->bytes)) {
      error = "cannot write " + path;
      return "";
    }
    argv.push_back(path);
  }
  // The kernels call libm (tanhf, expf, ...); nothing else.
  argv.push_back("-lm");
  const std::string log = scratch.file("link.log");
  int status = run(argv, log);
  if (status != 0) {
    std::string output = readFile(log);
    error = status < 0 ? "cannot run the linker '" + argv[0] + "' (set DLC_LINKER to a C "
                         "compiler driver)"
                       : "'" + argv[0] + " -shared' failed (exit " + std::to_string(status) +
                             ")" + (output.empty() ? "" : ": " + output);
    return "";
  }
  std::string bytes = readFile(argv[3]);
  if (bytes.empty())
    error = "the linker wrote no shared object";
  return bytes;
}

std::shared_ptr<const LoadedHostCode> LoadedHostCode::open(const std::string &bytes,
                                                           std::string &error) {
  int fd = memfd_create("dlc-model-host-code", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create: ") + std::strerror(errno);
    return nullptr;
  }
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = std::string("writing the host code to memory: ") + std::strerror(errno);
      close(fd);
      return nullptr;
    }
    done += size_t(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    error = std::string("the host code does not load: ") + (why ? why : "dlopen failed");
    close(fd);
    return nullptr;
  }
  return std::shared_ptr<const LoadedHostCode>(new LoadedHostCode(handle, fd));
}

LoadedHostCode::~LoadedHostCode() {
  dlclose(handle_);
  close(fd_);
}

GeneratedKernel::Entry LoadedHostCode::entry(const std::string &symbol) const {
  return reinterpret_cast<GeneratedKernel::Entry>(dlsym(handle_, symbol.c_str()));
}

std::string host_code_unrunnable(const std::string &target) {
  std::istringstream words(target);
  std::string triple, cpu, features;
  words >> triple >> cpu >> features;
#if defined(__x86_64__)
  if (triple.rfind("x86_64", 0) != 0)
    return "it was generated for " + triple + ", this is x86_64";
#if defined(__GNUC__)
  // The features the compiler may use in vectorized loops, as GCC can test them.
  struct Feature {
    const char *llvm;
    bool present;
  };
  const Feature known[] = {
      {"sse4.1", bool(__builtin_cpu_supports("sse4.1"))},
      {"sse4.2", bool(__builtin_cpu_supports("sse4.2"))},
      {"avx", bool(__builtin_cpu_supports("avx"))},
      {"avx2", bool(__builtin_cpu_supports("avx2"))},
      {"fma", bool(__builtin_cpu_supports("fma"))},
      {"bmi", bool(__builtin_cpu_supports("bmi"))},
      {"bmi2", bool(__builtin_cpu_supports("bmi2"))},
      {"avx512f", bool(__builtin_cpu_supports("avx512f"))},
      {"avx512bw", bool(__builtin_cpu_supports("avx512bw"))},
      {"avx512dq", bool(__builtin_cpu_supports("avx512dq"))},
      {"avx512vl", bool(__builtin_cpu_supports("avx512vl"))},
      {"avx512cd", bool(__builtin_cpu_supports("avx512cd"))},
  };
  std::string missing;
  std::istringstream list(features);
  for (std::string feature; std::getline(list, feature, ',');) {
    if (feature.size() < 2 || feature[0] != '+')
      continue;
    for (const Feature &f : known)
      if (feature.compare(1, std::string::npos, f.llvm) == 0 && !f.present)
        missing += (missing.empty() ? "" : ", ") + std::string(f.llvm);
  }
  if (!missing.empty())
    return "it uses " + missing + ", which this CPU lacks";
#endif
  return "";
#else
  return "stored host code runs on x86_64 only (it was generated for " + triple + ")";
#endif
}

bool model_host_code_enabled() {
  static const bool enabled = [] {
    const char *flag = std::getenv("DLC_MODEL_HOST_CODE");
    return !(flag && std::string(flag) == "0");
  }();
  return enabled;
}

} // namespace dlc
