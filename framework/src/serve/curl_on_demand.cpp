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
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  CURLcode (*easy_pause)(CURL*, int) = nullptr;
  CURLM* (*multi_init)() = nullptr;
  CURLMcode (*multi_setopt)(CURLM*, CURLMoption, ...) = nullptr;
  CURLMcode (*multi_add_handle)(CURLM*, CURL*) = nullptr;
  CURLMcode (*multi_remove_handle)(CURLM*, CURL*) = nullptr;
  CURLMcode (*multi_socket_action)(CURLM*, curl_socket_t, int, int*) = nullptr;
  CURLMsg* (*multi_info_read)(CURLM*, int*) = nullptr;
  CURLMcode (*multi_cleanup)(CURLM*) = nullptr;
  CURLSH* (*share_init)() = nullptr;
  CURLSHcode (*share_setopt)(CURLSH*, CURLSHoption, ...) = nullptr;
  CURLU* (*url)() = nullptr;
  CURLUcode (*url_set)(CURLU*, CURLUPart, const char*, unsigned int) = nullptr;
  CURLUcode (*url_get)(CURLU*, CURLUPart, char**, unsigned int) = nullptr;
  void (*url_cleanup)(CURLU*) = nullptr;
  void (*free)(void*) = nullptr;
  bool loaded = false;
};

const Curl& curl() {
  static const Curl c = [] {
    Curl out;
    compactor::LibraryOnDemand lib("libcurl.so.4");
    out.loaded = lib.get(out.global_init, "curl_global_init") && lib.get(out.easy_init, "curl_easy_init") &&
                 lib.get(out.easy_setopt, "curl_easy_setopt") && lib.get(out.easy_perform, "curl_easy_perform") &&
                 lib.get(out.easy_cleanup, "curl_easy_cleanup") && lib.get(out.easy_strerror, "curl_easy_strerror") &&
                 lib.get(out.slist_append, "curl_slist_append") && lib.get(out.slist_free_all, "curl_slist_free_all") &&
                 lib.get(out.easy_getinfo, "curl_easy_getinfo") && lib.get(out.easy_pause, "curl_easy_pause") &&
                 lib.get(out.multi_init, "curl_multi_init") && lib.get(out.multi_setopt, "curl_multi_setopt") &&
                 lib.get(out.multi_add_handle, "curl_multi_add_handle") &&
                 lib.get(out.multi_remove_handle, "curl_multi_remove_handle") &&
                 lib.get(out.multi_socket_action, "curl_multi_socket_action") &&
                 lib.get(out.multi_info_read, "curl_multi_info_read") && lib.get(out.multi_cleanup, "curl_multi_cleanup") &&
                 lib.get(out.share_init, "curl_share_init") && lib.get(out.share_setopt, "curl_share_setopt") &&
                 lib.get(out.url, "curl_url") && lib.get(out.url_set, "curl_url_set") && lib.get(out.url_get, "curl_url_get") &&
                 lib.get(out.url_cleanup, "curl_url_cleanup") && lib.get(out.free, "curl_free");
    return out;
  }();
  return c;
}

// One argument follows an easy or multi option, of the type the option's number range says
// (curl.h, multi.h): long, object pointer, function pointer, curl_off_t, or blob pointer.
template <typename Code, typename Handle, typename Option>
Code set_ranged(Code (*set)(Handle*, Option, ...), Handle* handle, Option option, va_list ap) {
  const long o = static_cast<long>(option);
  if (o < CURLOPTTYPE_OBJECTPOINT) return set(handle, option, va_arg(ap, long));
  if (o < CURLOPTTYPE_FUNCTIONPOINT) return set(handle, option, va_arg(ap, void*));
  if (o < CURLOPTTYPE_OFF_T) return set(handle, option, va_arg(ap, void (*)()));
  if (o < CURLOPTTYPE_BLOB) return set(handle, option, va_arg(ap, curl_off_t));
  return set(handle, option, va_arg(ap, void*));
}

}  // namespace

extern "C" {

CURLcode curl_global_init(long flags) { return curl().loaded ? curl().global_init(flags) : CURLE_FAILED_INIT; }

CURL* curl_easy_init() { return curl().loaded ? curl().easy_init() : nullptr; }

CURLcode curl_easy_setopt(CURL* handle, CURLoption option, ...) {
  if (!curl().loaded) return CURLE_FAILED_INIT;
  va_list ap;
  va_start(ap, option);
  CURLcode rc = set_ranged(curl().easy_setopt, handle, option, ap);
  va_end(ap);
  return rc;
}

CURLMcode curl_multi_setopt(CURLM* multi, CURLMoption option, ...) {
  if (!curl().loaded) return CURLM_BAD_HANDLE;
  va_list ap;
  va_start(ap, option);
  CURLMcode rc = set_ranged(curl().multi_setopt, multi, option, ap);
  va_end(ap);
  return rc;
}

// Share options are not ranged: the lock functions take a function, USERDATA a pointer, the
// rest a long.
CURLSHcode curl_share_setopt(CURLSH* share, CURLSHoption option, ...) {
  if (!curl().loaded) return CURLSHE_NOT_BUILT_IN;
  va_list ap;
  va_start(ap, option);
  CURLSHcode rc;
  if (option == CURLSHOPT_LOCKFUNC || option == CURLSHOPT_UNLOCKFUNC) rc = curl().share_setopt(share, option, va_arg(ap, void (*)()));
  else if (option == CURLSHOPT_USERDATA) rc = curl().share_setopt(share, option, va_arg(ap, void*));
  else rc = curl().share_setopt(share, option, va_arg(ap, long));
  va_end(ap);
  return rc;
}

// Every CURLINFO takes one pointer.
CURLcode curl_easy_getinfo(CURL* handle, CURLINFO info, ...) {
  if (!curl().loaded) return CURLE_FAILED_INIT;
  va_list ap;
  va_start(ap, info);
  CURLcode rc = curl().easy_getinfo(handle, info, va_arg(ap, void*));
  va_end(ap);
  return rc;
}

CURLcode curl_easy_pause(CURL* handle, int bitmask) { return curl().loaded ? curl().easy_pause(handle, bitmask) : CURLE_FAILED_INIT; }
CURLM* curl_multi_init() { return curl().loaded ? curl().multi_init() : nullptr; }
CURLMcode curl_multi_add_handle(CURLM* m, CURL* e) { return curl().loaded ? curl().multi_add_handle(m, e) : CURLM_BAD_HANDLE; }
CURLMcode curl_multi_remove_handle(CURLM* m, CURL* e) { return curl().loaded ? curl().multi_remove_handle(m, e) : CURLM_BAD_HANDLE; }
CURLMcode curl_multi_socket_action(CURLM* m, curl_socket_t s, int events, int* running) {
  return curl().loaded ? curl().multi_socket_action(m, s, events, running) : CURLM_BAD_HANDLE;
}
CURLMsg* curl_multi_info_read(CURLM* m, int* left) { return curl().loaded ? curl().multi_info_read(m, left) : nullptr; }
CURLMcode curl_multi_cleanup(CURLM* m) { return curl().loaded ? curl().multi_cleanup(m) : CURLM_BAD_HANDLE; }
CURLU* curl_url() { return curl().loaded ? curl().url() : nullptr; }
CURLUcode curl_url_set(CURLU* u, CURLUPart part, const char* content, unsigned int flags) {
  return curl().loaded ? curl().url_set(u, part, content, flags) : CURLUE_OUT_OF_MEMORY;
}
CURLUcode curl_url_get(CURLU* u, CURLUPart part, char** out, unsigned int flags) {
  return curl().loaded ? curl().url_get(u, part, out, flags) : CURLUE_OUT_OF_MEMORY;
}
void curl_url_cleanup(CURLU* u) {
  if (curl().loaded) curl().url_cleanup(u);
}
void curl_free(void* p) {
  if (curl().loaded) curl().free(p);
}
CURLSH* curl_share_init() { return curl().loaded ? curl().share_init() : nullptr; }

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
