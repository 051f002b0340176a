// quire-server's HTTP API (docs/API.md): routes, the bearer-token check, and errors as JSON.
#pragma once

#include <httplib.h>

#include "job_board.h"
#include "server_metrics.h"
#include "server_options.h"

namespace quire::server {

void installRoutes(httplib::Server& server, JobBoard& board, ServerMetrics& metrics, const ServerOptions& options);

}  // namespace quire::server
