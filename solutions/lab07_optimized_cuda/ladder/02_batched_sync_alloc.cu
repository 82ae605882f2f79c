// Rung 02: not written yet (the rung registers itself with COURSE_LADDER_RUNG once it is).
#include "ladder.hpp"
