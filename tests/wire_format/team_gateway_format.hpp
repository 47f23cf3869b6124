// TEST ONLY: a team's own API as a wire format (team_gateway_format.cpp).
#pragma once

#include "wire/wire_format.hpp"

namespace compactor::test {

const wire::WireFormat& team_gateway_format();

}  // namespace compactor::test
