#include "bench/png_render.hpp"

#include "platform/library_on_demand.hpp"

#include <cairo.h>
#include <librsvg/rsvg.h>


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

// Loaded once per process, kept open (platform/library_on_demand.hpp; GObject types cannot be
// unregistered anyway).
const Rsvg& rsvg() {
  static const Rsvg r = [] {
    Rsvg out;
    LibraryOnDemand lib("librsvg-2.so.2");
    const bool found =
        lib.get(out.new_from_data, "rsvg_handle_new_from_data") && lib.get(out.size_in_pixels, "rsvg_handle_get_intrinsic_size_in_pixels") &&
        lib.get(out.render_document, "rsvg_handle_render_document") && lib.get(out.object_unref, "g_object_unref") &&
        lib.get(out.error_free, "g_error_free") && lib.get(out.surface_create, "cairo_image_surface_create") && lib.get(out.create, "cairo_create") &&
        lib.get(out.scale, "cairo_scale") && lib.get(out.destroy, "cairo_destroy") && lib.get(out.surface_destroy, "cairo_surface_destroy") &&
        lib.get(out.write_png, "cairo_surface_write_to_png_stream") && lib.get(out.status_to_string, "cairo_status_to_string");
    if (!found) out.error = lib.why() + " (Debian's librsvg2-2 draws the PNG charts)";
    return out;
  }();
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
