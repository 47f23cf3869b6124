// What makes a Meter: only code that can include this header, the host's meter kinds (meter/)
// and its tests. It is not an SDK header, so no plugin can make a meter of its own.
#pragma once

#include "compactor/meter.hpp"

namespace compactor {

class MeterKey final {};

}  // namespace compactor
