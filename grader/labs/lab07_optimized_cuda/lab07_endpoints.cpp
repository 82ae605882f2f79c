// placeholder: being written
#include "rpc/endpoints.hpp"
