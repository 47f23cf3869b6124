// The bench's charts as PNG too, for a reader on a headless server or in a chat: each SVG drawn
// by librsvg (Debian's librsvg2, its C API) onto a cairo image at twice its size. librsvg is
// loaded when a PNG is first asked for, not linked: its 49 libraries would cost every `compactor`
// process about 21 ms at start (measured with an empty program, 200 starts each way), and a
// `compactor run` before every model call must not pay for the bench's pictures.
#pragma once

#include "compactor/error.hpp"

#include <string>

namespace compactor::bench {

// How much larger than the SVG's own size the PNG is drawn.
inline constexpr int kPngScale = 2;

// The PNG of `svg` (its bytes); an error naming what failed: librsvg not installed
// (librsvg-2.so.2), an SVG it cannot read, or cairo's status.
Expected<std::string> svg_to_png(const std::string& svg);

}  // namespace compactor::bench
