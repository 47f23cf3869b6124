// libcurl, loaded when `compactor serve` first calls it rather than when any command starts.
// Linked, libcurl and the ~30 libraries it needs (TLS, Kerberos, LDAP, SSH…) cost every process
// about 9 ms of CPU in the dynamic loader (most of the fixed cost of `compactor run`, which never
// makes a request). These definitions stand in for the few functions serve uses and
// forward to libcurl.so.4 opened with dlopen on first use; serve's code is unchanged. When the
// library cannot be opened, curl_global_init and curl_easy_init fail as libcurl documents
// (CURLE_FAILED_INIT, a null handle), which serve reports as it reports any client failure.
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "platform/library_on_demand.hpp"

#include <cstdarg>

namespace {

struct Curl {
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  bool loaded = false;
};

const Curl& curl() {
  static const Curl c = [] {
    Curl out;
    compactor::LibraryOnDemand lib("libcurl.so.4");
    out.loaded = lib.get(out.global_init, "curl_global_init") && lib.get(out.easy_init, "curl_easy_init") &&
                 lib.get(out.easy_setopt, "curl_easy_setopt") && lib.get(out.easy_perform, "curl_easy_perform") &&
                 lib.get(out.easy_cleanup, "curl_easy_cleanup") && lib.get(out.easy_strerror, "curl_easy_strerror") &&
                 lib.get(out.slist_append, "curl_slist_append") && lib.get(out.slist_free_all, "curl_slist_free_all");
    return out;
  }();
  return c;
}

}  // namespace

extern "C" {

CURLcode curl_global_init(long flags) { return curl().loaded ? curl().global_init(flags) : CURLE_FAILED_INIT; }

CURL* curl_easy_init() { return curl().loaded ? curl().easy_init() : nullptr; }

// One argument follows the option, of the type the option's number range says (curl.h):
// long, object pointer, function pointer, curl_off_t, or blob pointer.
CURLcode curl_easy_setopt(CURL* handle, CURLoption option, ...) {
  if (!curl().loaded) return CURLE_FAILED_INIT;
  va_list ap;
  va_start(ap, option);
  CURLcode rc;
  if (option < CURLOPTTYPE_OBJECTPOINT) {
    long v = va_arg(ap, long);
    rc = curl().easy_setopt(handle, option, v);
  } else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
    void* v = va_arg(ap, void*);
    rc = curl().easy_setopt(handle, option, v);
  } else if (option < CURLOPTTYPE_OFF_T) {
    void (*v)() = va_arg(ap, void (*)());
    rc = curl().easy_setopt(handle, option, v);
  } else if (option < CURLOPTTYPE_BLOB) {
    curl_off_t v = va_arg(ap, curl_off_t);
    rc = curl().easy_setopt(handle, option, v);
  } else {
    void* v = va_arg(ap, void*);
    rc = curl().easy_setopt(handle, option, v);
  }
  va_end(ap);
  return rc;
}

CURLcode curl_easy_perform(CURL* handle) { return curl().loaded ? curl().easy_perform(handle) : CURLE_FAILED_INIT; }

void curl_easy_cleanup(CURL* handle) {
  if (curl().loaded) curl().easy_cleanup(handle);
}

const char* curl_easy_strerror(CURLcode code) {
  return curl().loaded ? curl().easy_strerror(code) : "libcurl.so.4 could not be loaded";
}

curl_slist* curl_slist_append(curl_slist* list, const char* text) {
  return curl().loaded ? curl().slist_append(list, text) : nullptr;
}

void curl_slist_free_all(curl_slist* list) {
  if (curl().loaded) curl().slist_free_all(list);
}

}  // extern "C"
