// One function per `compactor` subcommand; each returns the process exit code.
#pragma once

namespace compactor::cli {

int check_command(int argc, char** argv);

}  // namespace compactor::cli
