#include "bench/png_render.hpp"

#include <cairo.h>
#include <dlfcn.h>
#include <librsvg/rsvg.h>

#include <mutex>

namespace compactor::bench {

namespace {

// librsvg's and cairo's functions the drawing needs, found in librsvg-2.so.2 (cairo and GObject
// are its dependencies, so dlsym finds their symbols through its handle). The types are the
// headers' own, so a signature that differs does not compile.
struct Rsvg {
  decltype(&rsvg_handle_new_from_data) new_from_data = nullptr;
  decltype(&rsvg_handle_get_intrinsic_size_in_pixels) size_in_pixels = nullptr;
  decltype(&rsvg_handle_render_document) render_document = nullptr;
  decltype(&g_object_unref) object_unref = nullptr;
  decltype(&g_error_free) error_free = nullptr;
  decltype(&cairo_image_surface_create) surface_create = nullptr;
  decltype(&cairo_create) create = nullptr;
  decltype(&cairo_scale) scale = nullptr;
  decltype(&cairo_destroy) destroy = nullptr;
  decltype(&cairo_surface_destroy) surface_destroy = nullptr;
  decltype(&cairo_surface_write_to_png_stream) write_png = nullptr;
  decltype(&cairo_status_to_string) status_to_string = nullptr;
  std::string error;  // why it could not be loaded, if it could not
};

template <typename F>
bool find(void* library, const char* name, F& f, std::string& error) {
  f = reinterpret_cast<F>(::dlsym(library, name));
  if (f == nullptr && error.empty()) error = std::string("librsvg-2.so.2 has no ") + name;
  return f != nullptr;
}

// Loaded once per process; never unloaded (GObject types cannot be unregistered).
const Rsvg& rsvg() {
  static Rsvg r;
  static std::once_flag once;
  std::call_once(once, [] {
    void* library = ::dlopen("librsvg-2.so.2", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = ::dlerror();
      r.error = std::string(why != nullptr ? why : "librsvg-2.so.2: cannot load") + " (Debian's librsvg2-2 draws the PNG charts)";
      return;
    }
    find(library, "rsvg_handle_new_from_data", r.new_from_data, r.error);
    find(library, "rsvg_handle_get_intrinsic_size_in_pixels", r.size_in_pixels, r.error);
    find(library, "rsvg_handle_render_document", r.render_document, r.error);
    find(library, "g_object_unref", r.object_unref, r.error);
    find(library, "g_error_free", r.error_free, r.error);
    find(library, "cairo_image_surface_create", r.surface_create, r.error);
    find(library, "cairo_create", r.create, r.error);
    find(library, "cairo_scale", r.scale, r.error);
    find(library, "cairo_destroy", r.destroy, r.error);
    find(library, "cairo_surface_destroy", r.surface_destroy, r.error);
    find(library, "cairo_surface_write_to_png_stream", r.write_png, r.error);
    find(library, "cairo_status_to_string", r.status_to_string, r.error);
  });
  return r;
}

cairo_status_t append(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

}  // namespace

Expected<std::string> svg_to_png(const std::string& svg) {
  const Rsvg& r = rsvg();
  if (!r.error.empty()) return Error{r.error};
  GError* error = nullptr;
  RsvgHandle* handle = r.new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &error);
  if (handle == nullptr) {
    std::string why = error != nullptr ? error->message : "unknown error";
    if (error != nullptr) r.error_free(error);
    return Error{"librsvg cannot read the SVG: " + why};
  }
  double width = 0, height = 0;
  if (!r.size_in_pixels(handle, &width, &height) || width <= 0 || height <= 0) {
    r.object_unref(handle);
    return Error{"the SVG gives no size in pixels"};
  }
  cairo_surface_t* surface =
      r.surface_create(CAIRO_FORMAT_ARGB32, static_cast<int>(width) * kPngScale, static_cast<int>(height) * kPngScale);
  cairo_t* cr = r.create(surface);
  r.scale(cr, kPngScale, kPngScale);
  const RsvgRectangle viewport{0, 0, width, height};
  const bool drawn = r.render_document(handle, cr, &viewport, &error) != 0;
  std::string png;
  const cairo_status_t status = drawn ? r.write_png(surface, append, &png) : CAIRO_STATUS_SUCCESS;
  std::string why = drawn ? "" : error != nullptr ? error->message : "unknown error";
  if (error != nullptr) r.error_free(error);
  r.destroy(cr);
  r.surface_destroy(surface);
  r.object_unref(handle);
  if (!drawn) return Error{"librsvg cannot draw the SVG: " + why};
  if (status != CAIRO_STATUS_SUCCESS) return Error{std::string("cairo cannot write the PNG: ") + r.status_to_string(status)};
  return png;
}

}  // namespace compactor::bench
