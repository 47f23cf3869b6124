// One function per `compactor` subcommand; each returns the process exit code.
#pragma once

namespace compactor::cli {

int check_command(int argc, char** argv);
int run_command(int argc, char** argv);
int validate_command(int argc, char** argv);
int print_pipeline_command(int argc, char** argv);
int plugins_command(int argc, char** argv);
int restore_command(int argc, char** argv);
int archive_command(int argc, char** argv);
int import_command(int argc, char** argv);
int bench_command(int argc, char** argv);
int replay_command(int argc, char** argv);
int count_command(int argc, char** argv);
int calibrate_command(int argc, char** argv);
int serve_command(int argc, char** argv);
int serve_worker_command(int argc, char** argv);
int serve_token_command(int argc, char** argv);
int mcp_command(int argc, char** argv);

}  // namespace compactor::cli
