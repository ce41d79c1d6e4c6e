// train_image_folder: trains a model on a folder of images in class subfolders (see apps/image_folder.h).
#include <iostream>

#include "apps/image_folder.h"

int main(int argc, char** argv) { return ember::image_folder_app::train_image_folder_main(argc, argv, std::cout, std::cerr); }
